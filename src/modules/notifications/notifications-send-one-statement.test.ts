import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { call } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { transactions, watchedApp, writes } from '../../../test/helpers/watched-app.js'
import { onCitusCluster } from '../../../test/helpers/citus.js'
import type { DeliverPayload } from './sending/fan-out.js'

// A small send to listed users is written by one statement when nothing needs a transaction
// (decision 0005, "Sixth pass"); these tests watch the statements the app sends.
const db = testDb()
const { app, watch } = await watchedApp()
test.after(() => app.close())

const sendWatched = (token: string, payload: object) =>
  watch(() => call(app, token, { method: 'POST', url: '/api/notifications', payload }))

async function deliveriesOf(tenant: GivenTenant): Promise<DeliverPayload[]> {
  const { rows } = await sql<{ payload: DeliverPayload }>`
    select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'notifications:deliver' and (j.payload->>'tenantId')::bigint = ${tenant.id} order by j.id`.execute(
    db,
  )
  return rows.map((row) => row.payload)
}

const recordsOf = async (tenant: GivenTenant) =>
  (
    await db
      .selectFrom('notifications')
      .select(['notifiable_id', 'targetable_id', 'source_key'])
      .where('tenant_id', '=', tenant.id)
      .orderBy('notifiable_id')
      .execute()
  ).map((r) => ({ ...r, notifiable_id: Number(r.notifiable_id), targetable_id: Number(r.targetable_id) }))

test('a send to listed users is one statement with no transaction: the send, its records, their delivery job and the event', async () => {
  const tenant = await given.tenant(db)
  await given.exemptFromLimits(db, tenant)
  const [a, b] = [await given.user(db, tenant), await given.user(db, tenant)]

  const { result: res, statements } = await sendWatched(tenant.adminToken, {
    title: 'Drill',
    body: '<p>Now</p>',
    url: '/drill',
    user_ids: [b.id, a.id, b.id],
  })

  assert.equal(res.statusCode, 202, res.body)
  const sentStatements = `sent:\n${statements.join('\n---\n')}`
  if (onCitusCluster) {
    // the transactional way: Citus evaluates every data-modifying CTE from the coordinator (docs/citus.md, "Two forms")
    assert.equal(transactions(statements).length, 1, sentStatements)
  } else {
    assert.equal(writes(statements).length, 1, `one writing statement, ${sentStatements}`)
    assert.deepEqual(transactions(statements), [])
  }
  const sent = await db
    .selectFrom('generic_notifications')
    .select(['id', 'user_ids'])
    .where('tenant_id', '=', tenant.id)
    .executeTakeFirstOrThrow()
  const sourceKey = `genericNotification:${sent.id}`
  const ids = [a.id, b.id].sort((x, y) => x - y)
  assert.deepEqual(
    await recordsOf(tenant),
    ids.map((id) => ({ notifiable_id: id, targetable_id: Number(sent.id), source_key: sourceKey })),
  )
  assert.deepEqual(await deliveriesOf(tenant), [{ tenantId: tenant.id, sourceKey, userIds: ids }])
  const events = await db
    .selectFrom('domain_events')
    .select(['type', 'subject_id', 'data'])
    .where('tenant_id', '=', tenant.id)
    .execute()
  assert.deepEqual(events, [
    {
      type: 'notification.sent',
      subject_id: String(sent.id),
      data: { title: 'Drill', url: '/drill', user_ids: [b.id, a.id], department_ids: [] },
    },
  ])
})

test('a send listing an inactive user takes the transaction: records for the active recipients only, one delivery job', async () => {
  const tenant = await given.tenant(db)
  await given.exemptFromLimits(db, tenant)
  const active = await given.user(db, tenant)
  const inactive = await given.user(db, tenant, { active: false })

  const { result: res, statements } = await sendWatched(tenant.adminToken, {
    title: 'Drill',
    body: 'x',
    url: '/drill',
    user_ids: [active.id, inactive.id],
  })

  assert.equal(res.statusCode, 202, res.body)
  assert.equal(transactions(statements).length, 1)
  assert.deepEqual(
    (await recordsOf(tenant)).map((r) => r.notifiable_id),
    [active.id],
  )
  assert.deepEqual(
    (await deliveriesOf(tenant)).map((d) => d.userIds),
    [[active.id]],
  )
  assert.equal(
    (await db.selectFrom('generic_notifications').select('id').where('tenant_id', '=', tenant.id).execute()).length,
    1,
  )
})

test('a send to a missing user writes nothing and names it (422)', async () => {
  const tenant = await given.tenant(db)
  await given.exemptFromLimits(db, tenant)
  const user = await given.user(db, tenant)

  const { result: res } = await sendWatched(tenant.adminToken, {
    title: 'Drill',
    body: 'x',
    url: '/drill',
    user_ids: [user.id, 987654321],
  })

  assert.equal(res.statusCode, 422, res.body)
  assert.deepEqual(Object.keys(res.json().errors), ['user_ids'])
  assert.equal(
    (await db.selectFrom('generic_notifications').select('id').where('tenant_id', '=', tenant.id).execute()).length,
    0,
  )
  assert.deepEqual(await recordsOf(tenant), [])
  assert.deepEqual(await deliveriesOf(tenant), [])
})

test('with an active automation on notification.sent, the send takes the transaction and the webhook delivery commits with it', async () => {
  const tenant = await given.tenant(db)
  await given.exemptFromLimits(db, tenant)
  const user = await given.user(db, tenant)
  const actions = [{ type: 'webhook', config: { url: 'http://127.0.0.1:9/hook', method: 'POST', headers: {} } }]
  const { id: automationId } = await db
    .insertInto('automations')
    .values({ tenant_id: tenant.id, name: 'listens', event: 'notification.sent', actions: JSON.stringify(actions) })
    .returning('id')
    .executeTakeFirstOrThrow()

  const { result: res, statements } = await sendWatched(tenant.adminToken, {
    title: 'Drill',
    body: 'x',
    url: '/drill',
    user_ids: [user.id],
  })

  assert.equal(res.statusCode, 202, res.body)
  assert.equal(transactions(statements).length, 1)
  const hooks = await db
    .selectFrom('webhook_deliveries')
    .select('event_type')
    .where('tenant_id', '=', tenant.id)
    .where('automation_id', '=', automationId)
    .execute()
  assert.deepEqual(
    hooks.map((d) => d.event_type),
    ['notification.sent'],
  )
  assert.deepEqual(
    (await recordsOf(tenant)).map((r) => r.notifiable_id),
    [user.id],
  )
})
