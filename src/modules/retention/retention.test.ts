import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { test } from 'node:test'
import { sql } from 'kysely'
import pino from 'pino'
import { buildTestApp, call, testConfig } from '../../../test/helpers/build-test-app.js'
import { createRetentionService, DATA_CLASSES } from './index.js'
import { batchDeleteSql } from './retention.queries.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()
const DAY = 86_400_000
const ago = (days: number) => new Date(Date.now() - days * DAY).toISOString()

test('retention settings: defaults, a tenant sets its own, the operator maximum and the permission hold', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const employee = await given.user(db, tenant)

  const shown = await call(app, tenant.adminToken, { method: 'GET', url: '/api/administration/retention' })
  assert.equal(shown.statusCode, 200, shown.body)
  const { periods, defaults, maximums } = shown.json().data
  assert.deepEqual(periods, defaults)
  assert.equal(defaults.audit_log, 365)
  assert.equal(maximums.audit_log, 365)
  assert.equal(defaults.webhook_deliveries, 30)

  const put = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: '/api/administration/retention',
    payload: { stored_emails: 7, sessions: 14 },
  })
  assert.equal(put.statusCode, 200, put.body)
  assert.equal(put.json().data.periods.stored_emails, 7)
  assert.equal(put.json().data.periods.sessions, 14)
  assert.equal(put.json().data.periods.audit_log, 365, 'classes not sent keep theirs')
  const reset = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: '/api/administration/retention',
    payload: { sessions: null },
  })
  assert.equal(reset.json().data.periods.sessions, defaults.sessions)

  const beyond = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: '/api/administration/retention',
    payload: { audit_log: 400 },
  })
  assert.equal(beyond.statusCode, 422)
  assert.ok(beyond.json().errors.audit_log)
  const zero = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: '/api/administration/retention',
    payload: { stored_emails: 0 },
  })
  assert.equal(zero.statusCode, 422)
  assert.ok(zero.json().errors.stored_emails)
  assert.equal(
    (await call(app, employee.token, { method: 'GET', url: '/api/administration/retention' })).statusCode,
    403,
  )
  const audited = await db
    .selectFrom('audit_log')
    .select(['action', 'changes'])
    .where('tenant_id', '=', tenant.id)
    .where('action', '=', 'retention.update')
    .execute()
  assert.equal(audited.length, 2)
})

/** One row older and one younger than `days` in every data class of the tenant; returns the old counts. */
async function seed(tenant: GivenTenant, days: number) {
  const user = await given.user(db, tenant)
  const old = ago(days + 1)
  const young = ago(days - 1)
  for (const at of [old, young]) {
    // read notifications (by read_at), unread (by created_at)
    await sql`insert into notifications (tenant_id, type, notifiable_type, notifiable_id, targetable_type, targetable_id, source_key, data, read_at, created_at)
      values (${tenant.id}, 't', 'user', ${user.id}, 'x', 1, ${randomUUID()}, '{}', ${at}, ${at}),
             (${tenant.id}, 't', 'user', ${user.id}, 'x', 1, ${randomUUID()}, '{}', null, ${at})`.execute(db)
    await sql`insert into audit_log (tenant_id, action, target_type, created_at) values (${tenant.id}, 'x.y', 'user', ${at})`.execute(
      db,
    )
    await sql`insert into shared_item_accesses (tenant_id, shared_item_id, outcome, created_at) values (${tenant.id}, 'abc', 'denied', ${at})`.execute(
      db,
    )
    await sql`insert into outbound_messages (tenant_id, channel, status, recipient, created_at) values (${tenant.id}, 'email', 'sent', 'a@example.com', ${at})`.execute(
      db,
    )
    const automation = await sql<{ id: string }>`
      insert into automations (tenant_id, name, event, active, actions) values (${tenant.id}, 'a', 'user.created', true, '[]') returning id`.execute(
      db,
    )
    await sql`insert into webhook_deliveries (tenant_id, automation_id, action_index, event_id, event_type, event_timestamp, event_data, url, method, status, created_at)
      values (${tenant.id}, ${automation.rows[0]!.id}, 0, ${randomUUID()}, 'user.created', ${at}, '{}', 'https://hooks.example', 'POST', 'succeeded', ${at}),
             (${tenant.id}, ${automation.rows[0]!.id}, 0, ${randomUUID()}, 'user.created', ${at}, '{}', 'https://hooks.example', 'POST', 'pending', ${at})`.execute(
      db,
    )
    await sql`insert into data_exports (tenant_id, user_id, status, created_at) values (${tenant.id}, ${user.id}, 'expired', ${at}), (${tenant.id}, ${user.id}, 'ready', ${at})`.execute(
      db,
    )
    // an ended session: token expired at `at`, last used then
    const token = await sql<{ id: string }>`
      insert into access_tokens (tenant_id, user_id, token_hash, expires_at, created_at) values (${tenant.id}, ${user.id}, ${randomBytes(32)}, ${at}, ${at}) returning id`.execute(
      db,
    )
    await sql`insert into session_activity (tenant_id, token_id, user_id, created_at, last_used_at, ip, user_agent) values (${tenant.id}, ${token.rows[0]!.id}, ${user.id}, ${at}, ${at}, '10.0.0.1', 'ua')`.execute(
      db,
    )
  }
  // a live session last used long ago is not an ended one
  const live = await sql<{ id: string }>`
    insert into access_tokens (tenant_id, user_id, token_hash, expires_at) values (${tenant.id}, ${user.id}, ${randomBytes(32)}, now() + interval '30 days') returning id`.execute(
    db,
  )
  await sql`insert into session_activity (tenant_id, token_id, user_id, created_at, last_used_at) values (${tenant.id}, ${live.rows[0]!.id}, ${user.id}, ${old}, ${old})`.execute(
    db,
  )
}

const countAll = async (tenantId: number) => {
  const counts: Record<string, number> = {}
  for (const table of [
    'notifications',
    'audit_log',
    'shared_item_accesses',
    'outbound_messages',
    'webhook_deliveries',
    'access_tokens',
    'session_activity',
    'data_exports',
  ]) {
    const { rows } = await sql<{
      n: number
    }>`select count(*)::int as n from ${sql.table(table)} where tenant_id = ${tenantId}`.execute(db)
    counts[table] = rows[0]!.n
  }
  return counts
}

test('the sweep removes exactly what is older than each period, as its dry run counted; nothing younger, no other tenant', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const other = await given.tenant(db)
  const days = 20
  const every = {
    notifications_read: days,
    notifications_unread: days,
    audit_log: days,
    share_access_log: days,
    webhook_deliveries: days,
    stored_emails: days,
    sessions: days,
    data_exports: days,
  }
  for (const t of [tenant, other])
    assert.equal(
      (await call(app, t.adminToken, { method: 'PUT', url: '/api/administration/retention', payload: every }))
        .statusCode,
      200,
    )
  await seed(tenant, days)
  await seed(other, days)
  const beforeOther = await countAll(other.id)
  const before = await countAll(tenant.id)

  const dry = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/administration/retention/sweep?dry_run=true',
  })
  assert.equal(dry.statusCode, 200, dry.body)
  assert.equal(dry.json().data.dry_run, true)
  assert.deepEqual(await countAll(tenant.id), before, 'a dry run removes nothing')
  const real = await call(app, tenant.adminToken, { method: 'POST', url: '/api/administration/retention/sweep' })
  assert.equal(real.statusCode, 200, real.body)

  assert.deepEqual(real.json().data.removed, dry.json().data.removed, 'the dry run counted what the run removed')
  assert.deepEqual(real.json().data.removed, {
    notifications_read: 1,
    notifications_unread: 1,
    audit_log: 1,
    share_access_log: 1,
    webhook_deliveries: 1, // the old pending delivery stays
    stored_emails: 1,
    sessions: 2, // the expired token and its activity; not the live token's
    data_exports: 1, // the expired one; the old ready one's archive is the export sweep's
    deactivated_accounts: 0,
  })
  const after = await countAll(tenant.id)
  assert.deepEqual(after, {
    notifications: before.notifications! - 2,
    // the old entry went; the run's own retention.sweep record came
    audit_log: before.audit_log! - 1 + 1,
    shared_item_accesses: before.shared_item_accesses! - 1,
    outbound_messages: before.outbound_messages! - 1,
    webhook_deliveries: before.webhook_deliveries! - 1,
    access_tokens: before.access_tokens! - 1,
    session_activity: before.session_activity! - 1,
    data_exports: before.data_exports! - 1,
  })
  assert.deepEqual(await countAll(other.id), beforeOther, 'another tenant is not touched')
  const record = await db
    .selectFrom('audit_log')
    .select('changes')
    .where('tenant_id', '=', tenant.id)
    .where('action', '=', 'retention.sweep')
    .executeTakeFirstOrThrow()
  assert.deepEqual(record.changes, { removed: real.json().data.removed })

  const again = await call(app, tenant.adminToken, { method: 'POST', url: '/api/administration/retention/sweep' })
  assert.ok(
    Object.values(again.json().data.removed as Record<string, number>).every((n) => n === 0),
    'a second run finds nothing',
  )
})

test('deactivated accounts are erased after their period: deleted or past their leaving date, not switched off by hand', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const days = 30
  const put = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: '/api/administration/retention',
    payload: { deactivated_accounts: days },
  })
  assert.equal(put.statusCode, 200, put.body)
  const account = async (state: { deleted_at?: string; active?: boolean; leaving_date?: string }) => {
    const user = await given.user(db, tenant)
    await db
      .updateTable('users')
      .set({ ...state, active_derived: false })
      .where('tenant_id', '=', tenant.id)
      .where('id', '=', user.id)
      .execute()
    return user
  }
  const deletedLongAgo = await account({ deleted_at: ago(days + 5) })
  const leftLongAgo = await account({ active: false, leaving_date: ago(days + 5) })
  const deletedRecently = await account({ deleted_at: ago(days - 5) })
  const leftRecently = await account({ active: false, leaving_date: ago(days - 5) })
  const switchedOffByHand = await account({ active: false })
  const activeDespiteLeaving = await account({ active: true, leaving_date: ago(days + 5) })
  const other = await given.tenant(db)
  const otherDeleted = await given.user(db, other)
  await db
    .updateTable('users')
    .set({ deleted_at: ago(400) })
    .where('id', '=', otherDeleted.id)
    .execute()

  const dry = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/administration/retention/sweep?dry_run=true',
  })
  assert.equal(dry.json().data.removed.deactivated_accounts, 2, dry.body)
  const real = await call(app, tenant.adminToken, { method: 'POST', url: '/api/administration/retention/sweep' })
  assert.equal(real.statusCode, 200, real.body)
  assert.equal(real.json().data.removed.deactivated_accounts, 2)

  const rows = await db
    .selectFrom('users')
    .select(['id', 'username', 'first_name', 'email', 'blacked_out_at'])
    .where('id', 'in', [
      deletedLongAgo.id,
      leftLongAgo.id,
      deletedRecently.id,
      leftRecently.id,
      switchedOffByHand.id,
      activeDespiteLeaving.id,
      otherDeleted.id,
    ])
    .execute()
  const erased = new Set(rows.filter((r) => r.blacked_out_at !== null).map((r) => r.id))
  assert.deepEqual([...erased].sort(), [deletedLongAgo.id, leftLongAgo.id].sort())
  for (const row of rows.filter((r) => erased.has(r.id))) {
    assert.equal(row.first_name, 'Former employee')
    assert.match(row.username, /^blackout-/)
    assert.equal(row.email, null)
  }
  const events = await db
    .selectFrom('audit_log')
    .select(['action', 'actor_id', 'target_id'])
    .where('tenant_id', '=', tenant.id)
    .where('action', '=', 'user.blackout')
    .execute()
  assert.deepEqual(events.map((e) => Number(e.target_id)).sort(), [deletedLongAgo.id, leftLongAgo.id].sort())
  assert.ok(
    events.every((e) => Number(e.actor_id) === tenant.adminId),
    'recorded as done by the administrator who ran the sweep',
  )
  const again = await call(app, tenant.adminToken, { method: 'POST', url: '/api/administration/retention/sweep' })
  assert.equal(again.json().data.removed.deactivated_accounts, 0, 'a second run finds nothing')

  // the daily job's run: no person behind it
  const deletedOnce = await account({ deleted_at: ago(days + 1) })
  const job = await createRetentionService({ db, config: testConfig(), log: pino({ level: 'silent' }) }).sweepTenant(
    tenant.id,
  )
  assert.equal(job.removed.deactivated_accounts, 1)
  const byJob = await db
    .selectFrom('audit_log')
    .select('actor_id')
    .where('tenant_id', '=', tenant.id)
    .where('action', '=', 'user.blackout')
    .where('target_id', '=', String(deletedOnce.id))
    .executeTakeFirstOrThrow()
  assert.equal(byJob.actor_id, null)
})

test("a sweep batch takes the oldest rows from the time column's index, not a scan of the tenant's heap", async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  // the old rows last in the heap, as a real table has them only after years: a scan from the start
  // would pass every young row on every batch
  await sql`insert into notifications (tenant_id, notifiable_id, type, targetable_type, targetable_id, source_key, read_at, created_at)
    select ${tenant.id}, ${user.id}, 't', 'x', 1, 'young-' || g, now() - interval '1 day', now() - interval '2 days'
    from generate_series(1, 20000) g`.execute(db)
  await sql`insert into notifications (tenant_id, notifiable_id, type, targetable_type, targetable_id, source_key, read_at, created_at)
    select ${tenant.id}, ${user.id}, 't', 'x', 1, 'old-' || g, now() - interval '400 days', now() - interval '401 days'
    from generate_series(1, 20000) g`.execute(db)
  // another tenant's old rows, as every shared table has them: the time column's global index (the purge
  // job's) would pass them too, so the tenant's own index is the cheaper path, not an equal one that the
  // statistics of the shared test database could tip either way
  const other = await given.tenant(db)
  const otherUser = await given.user(db, other)
  await sql`insert into notifications (tenant_id, notifiable_id, type, targetable_type, targetable_id, source_key, read_at, created_at)
    select ${other.id}, ${otherUser.id}, 't', 'x', 1, 'other-' || g, now() - interval '300 days', now() - interval '301 days'
    from generate_series(1, 40000) g`.execute(db)
  await sql`analyze notifications`.execute(db)
  const plans: string[] = []
  for (const key of ['notifications_read', 'notifications_unread', 'audit_log'] as const) {
    const part = DATA_CLASSES[key].parts[0]!
    const compiled = batchDeleteSql(part, tenant.id, sql`${ago(180)}::timestamptz`).compile(db)
    const { rows } = await db
      .transaction()
      .execute(async (trx) =>
        trx.executeQuery<{ 'QUERY PLAN': string }>({ ...compiled, sql: `explain ${compiled.sql}` }),
      )
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n')
    plans.push(plan)
    assert.doesNotMatch(plan, new RegExp(`Seq Scan on ${part.table}`), `${key}:\n${plan}`)
    // with many rows past the cut-off (the read ones here) the index gives the order; with few, the
    // planner may rightly sort the few it finds
    if (key === 'notifications_read') assert.doesNotMatch(plan, /Sort/, `${key}: the index gives the order:\n${plan}`)
  }
  // the tenant's index or the global one of the purge job: either gives the rows oldest first
  assert.match(plans[0]!, /Index Scan using notifications_(tenant_read|read_at)_idx/)
  for (const plan of plans) assert.match(plan, /Index Scan/)
  await sql`delete from notifications where tenant_id in (${tenant.id}, ${other.id})`.execute(db)
})
