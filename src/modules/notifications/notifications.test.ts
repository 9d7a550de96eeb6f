import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { genericPlanOf } from '../../../test/helpers/generic-plan.js'
import { applyListQuery } from '../../platform/query/apply-query.js'
import { parseListQuery } from '../../platform/query/parse-query.js'
import { notificationResource } from './notifications.resource.js'
import { purgeReadNotifications } from './notifications.jobs.js'
import { recipientsSql } from './sending/fan-out.queries.js'
import { onCitusCluster, skipOnCitus } from '../../../test/helpers/citus.js'

const db = testDb()
const get = async (token: string, url: string) => call(await buildTestApp(), token, { method: 'GET', url })
const put = async (token: string, url: string, payload: unknown) =>
  call(await buildTestApp(), token, { method: 'PUT', url, payload: payload as object })

async function withTwoUsers() {
  const tenant = await given.tenant(db)
  const alice = await given.user(db, tenant)
  const bob = await given.user(db, tenant)
  return { tenant, alice, bob }
}

const row = (id: string) =>
  db.selectFrom('notifications').select(['seen_at', 'read_at']).where('id', '=', id).executeTakeFirstOrThrow()

test("lists only the requester's notifications, newest first, with all fields", async () => {
  const { tenant, alice, bob } = await withTwoUsers()
  const older = await given.notification(db, tenant, alice.id, { created_at: '2024-01-01 10:00:00' })
  const newer = await given.notification(db, tenant, alice.id, {
    created_at: '2024-01-02 10:00:00',
    data: { title: 'T', body: '<p>B</p>', url: '/x' },
  })
  await given.notification(db, tenant, bob.id)

  const res = await get(alice.token, '/api/notifications')

  assert.equal(res.statusCode, 200)
  const list = res.json()
  assert.deepEqual(
    list.map((n: { id: string }) => n.id),
    [newer, older],
  )
  assert.deepEqual(list[0], {
    id: newer,
    type: 'genericNotification',
    notifiable_type: 'user',
    notifiable_id: alice.id,
    targetable_type: 'genericNotification',
    targetable_id: 1,
    data: { title: 'T', body: '<p>B</p>', url: '/x' },
    seen_at: null,
    read_at: null,
    created_at: '2024-01-02 10:00:00',
    updated_at: list[0].updated_at,
  })
})

test('ties on created_at are ordered by id descending, and limit/offset page through them', async () => {
  const { tenant, alice } = await withTwoUsers()
  const ids = []
  for (let i = 0; i < 4; i++)
    ids.push(await given.notification(db, tenant, alice.id, { created_at: '2024-03-01 00:00:00' }))
  const expected = [...ids].sort().reverse()

  const first = await get(alice.token, '/api/notifications?limit=2')
  const second = await get(alice.token, '/api/notifications?limit=2&offset=2')

  assert.deepEqual(
    [...first.json(), ...second.json()].map((n: { id: string }) => n.id),
    expected,
  )
})

test('filters on type, targetable, read state, unread and created_at; unknown filters are 422', async () => {
  const { tenant, alice } = await withTwoUsers()
  const post = await given.notification(db, tenant, alice.id, {
    type: 'infoboardPostCreated',
    targetable_type: 'infoboardPost',
    targetable_id: 7,
    created_at: '2024-05-01 00:00:00',
  })
  const read = await given.notification(db, tenant, alice.id, {
    read_at: '2024-05-02 00:00:00',
    seen_at: '2024-05-02 00:00:00',
    created_at: '2024-04-01 00:00:00',
  })
  const unseen = await given.notification(db, tenant, alice.id, { created_at: '2024-03-01 00:00:00' })
  const ids = async (query: string) =>
    (await get(alice.token, `/api/notifications?${query}`)).json().map((n: { id: string }) => n.id)

  assert.deepEqual(await ids('filter[type]=infoboardPostCreated'), [post])
  assert.deepEqual(await ids('filter[targetable_type]=infoboardPost&filter[targetable_id]=7'), [post])
  assert.deepEqual(await ids('filter[unread]=true'), [post, unseen])
  assert.deepEqual(await ids('filter[unread]=false'), [read])
  assert.deepEqual(await ids('filter[read_at]=null'), [post, unseen])
  assert.deepEqual(await ids('filter[read_at][null]=false'), [read])
  assert.deepEqual(await ids('filter[created_at][lt]=2024-04-15'), [read, unseen])
  assert.deepEqual(await ids('sort=created_at'), [unseen, read, post])

  const unknown = await get(alice.token, '/api/notifications?filter[notifiable_id]=1')
  assert.equal(unknown.statusCode, 422)
  assert.ok(unknown.json().errors['filter.notifiable_id'])
  assert.equal((await get(alice.token, '/api/notifications?filter[nope]=1')).statusCode, 422)
  assert.equal((await get(alice.token, '/api/notifications?filter[unread]=maybe')).statusCode, 422)
  assert.equal((await get(alice.token, '/api/notifications?selects=id,secret')).statusCode, 422)
})

test('count answers a bare integer after filters', async () => {
  const { tenant, alice, bob } = await withTwoUsers()
  await given.notification(db, tenant, alice.id)
  await given.notification(db, tenant, alice.id, { type: 'manualEntryUpdated' })
  await given.notification(db, tenant, alice.id, { read_at: '2024-01-01 00:00:00' })
  await given.notification(db, tenant, bob.id)

  const all = await get(alice.token, '/api/notifications/count')
  const unread = await get(alice.token, '/api/notifications/count?filter[read_at]=null')
  const unreadFlag = await get(
    alice.token,
    '/api/notifications/count?filter[unread]=true&filter[type]=manualEntryUpdated',
  )
  const bad = await get(alice.token, '/api/notifications/count?filter[bogus]=1')

  assert.equal(all.statusCode, 200)
  assert.equal(all.body, '3')
  assert.equal(unread.json(), 2)
  assert.equal(unreadFlag.json(), 1)
  assert.equal(bad.statusCode, 422)
})

test('the same count and page asked by users of two tenants show the records of each (one statement shape for all)', async () => {
  const first = await withTwoUsers()
  const second = await withTwoUsers()
  await given.notification(db, first.tenant, first.alice.id)
  await given.notification(db, first.tenant, first.alice.id)
  await given.notification(db, first.tenant, first.bob.id)
  await given.notification(db, second.tenant, second.bob.id)

  const counts = []
  const pages = []
  for (const user of [first.alice, first.bob, second.alice, second.bob, first.alice]) {
    counts.push((await get(user.token, '/api/notifications/count?filter[read_at]=null')).json())
    pages.push(
      (await get(user.token, '/api/notifications?limit=50&selects=notifiable_id'))
        .json()
        .map((n: { notifiable_id: number }) => n.notifiable_id),
    )
  }

  assert.deepEqual(counts, [2, 1, 0, 1, 2])
  assert.deepEqual(pages, [
    [first.alice.id, first.alice.id],
    [first.bob.id],
    [],
    [second.bob.id],
    [first.alice.id, first.alice.id],
  ])
})

test('lists by targetable type and by type and ID', async () => {
  const { tenant, alice, bob } = await withTwoUsers()
  const a = await given.notification(db, tenant, alice.id, {
    targetable_type: 'manualEntry',
    targetable_id: 5,
    created_at: '2024-01-02 00:00:00',
  })
  const b = await given.notification(db, tenant, alice.id, {
    targetable_type: 'manualEntry',
    targetable_id: 6,
    created_at: '2024-01-01 00:00:00',
  })
  await given.notification(db, tenant, alice.id, { targetable_type: 'infoboardPost', targetable_id: 5 })
  await given.notification(db, tenant, bob.id, { targetable_type: 'manualEntry', targetable_id: 5 })

  const byType = await get(alice.token, '/api/notifications/type/manualEntry')
  const byTarget = await get(alice.token, '/api/notifications/type/manualEntry/5?selects=id,targetable_id')

  assert.deepEqual(
    byType.json().map((n: { id: string }) => n.id),
    [a, b],
  )
  assert.deepEqual(byTarget.json(), [{ id: a, targetable_id: 5 }])
  assert.deepEqual((await get(alice.token, '/api/notifications/type/manualEntry/99')).json(), [])
})

test("shows one own notification with selects and relations; another user's is 404", async () => {
  const { tenant, alice, bob } = await withTwoUsers()
  const mine = await given.notification(db, tenant, alice.id)
  const theirs = await given.notification(db, tenant, bob.id)

  const res = await get(alice.token, `/api/notifications/${mine}?selects=id,type&relations=notifiable|targetable`)
  const other = await get(alice.token, `/api/notifications/${theirs}`)
  const malformed = await get(alice.token, '/api/notifications/not-a-uuid')
  const unknownRelation = await get(alice.token, `/api/notifications/${mine}?relations=owner`)

  assert.equal(res.statusCode, 200)
  const body = res.json()
  assert.equal(body.id, mine)
  assert.equal(body.type, 'genericNotification')
  assert.equal(body.read_at, undefined)
  assert.equal(body.notifiable.id, alice.id)
  assert.equal(body.notifiable.password_hash, undefined)
  assert.equal(body.targetable, null, 'targetable_id 1 is no generic notification of this tenant')
  assert.equal(other.statusCode, 404)
  assert.equal(malformed.statusCode, 404)
  assert.equal(unknownRelation.statusCode, 422)
})

test('PUT /api/notifications updates only own unread records and answers the number changed', async () => {
  const { tenant, alice, bob } = await withTwoUsers()
  const unread = await given.notification(db, tenant, alice.id)
  const seenEarlier = await given.notification(db, tenant, alice.id, { seen_at: '2024-01-01 08:00:00' })
  const alreadyRead = await given.notification(db, tenant, alice.id, {
    seen_at: '2023-01-01 00:00:00',
    read_at: '2023-01-01 00:00:00',
  })
  const bobs = await given.notification(db, tenant, bob.id)

  const res = await put(alice.token, '/api/notifications', { read_at: '2024-06-01 12:00:00' })

  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), { status: 'success', data: 2 })
  assert.deepEqual(
    await row(unread),
    { seen_at: '2024-06-01 12:00:00', read_at: '2024-06-01 12:00:00' },
    'read_at supplies seen_at',
  )
  assert.deepEqual(
    await row(seenEarlier),
    { seen_at: '2024-01-01 08:00:00', read_at: '2024-06-01 12:00:00' },
    'an earlier seen_at is kept',
  )
  assert.deepEqual(
    await row(alreadyRead),
    { seen_at: '2023-01-01 00:00:00', read_at: '2023-01-01 00:00:00' },
    'read records are untouched',
  )
  assert.deepEqual(await row(bobs), { seen_at: null, read_at: null })
})

test("PUT /api/notifications applies a JSON filter with the list's meaning; seen_at alone leaves read_at", async () => {
  const { tenant, alice } = await withTwoUsers()
  const post = await given.notification(db, tenant, alice.id, { targetable_type: 'infoboardPost', targetable_id: 3 })
  const other = await given.notification(db, tenant, alice.id, { targetable_type: 'manualEntry', targetable_id: 3 })

  const res = await put(alice.token, '/api/notifications', {
    seen_at: '2024-02-03T04:05:06+02:00',
    filter: { targetable_type: 'infoboardPost', targetable_id: 3, read_at: null },
  })
  const badFilter = await put(alice.token, '/api/notifications', {
    seen_at: '2024-02-03 00:00:00',
    filter: { notifiable_id: 1 },
  })

  assert.equal(res.json().data, 1)
  assert.deepEqual(
    await row(post),
    { seen_at: '2024-02-03 02:05:06', read_at: null },
    'ISO 8601 with offset is stored in UTC',
  )
  assert.deepEqual(await row(other), { seen_at: null, read_at: null })
  assert.equal(badFilter.statusCode, 422)
  assert.ok(badFilter.json().errors['filter.notifiable_id'])
})

test('update bodies need seen_at or read_at and valid timestamps', async () => {
  const { tenant, alice } = await withTwoUsers()
  const id = await given.notification(db, tenant, alice.id)

  const cases: Array<[string, unknown]> = [
    ['/api/notifications', {}],
    ['/api/notifications', { filter: { type: 'x' } }],
    ['/api/notifications/type/genericNotification', {}],
    [`/api/notifications/${id}`, {}],
    ['/api/notifications', { read_at: 'yesterday' }],
    ['/api/notifications', { read_at: '2024-02-30 10:00:00' }],
    ['/api/notifications', { seen_at: '2024-01-01 25:00:00' }],
    ['/api/notifications', { read_at: null }],
    ['/api/notifications', { read_at: '2024-01-01 00:00:00', extra: 1 }],
  ]
  for (const [url, payload] of cases) {
    const res = await put(alice.token, url, payload)
    assert.equal(res.statusCode, 422, `${url} ${JSON.stringify(payload)}`)
    assert.equal(res.headers['content-type'], 'application/problem+json')
  }
  assert.deepEqual(await row(id), { seen_at: null, read_at: null })
})

test('PUT by target type and ID marks only matching unread records', async () => {
  const { tenant, alice } = await withTwoUsers()
  const five = await given.notification(db, tenant, alice.id, { targetable_type: 'manualEntry', targetable_id: 5 })
  const six = await given.notification(db, tenant, alice.id, { targetable_type: 'manualEntry', targetable_id: 6 })
  const post = await given.notification(db, tenant, alice.id, { targetable_type: 'infoboardPost', targetable_id: 5 })

  const byId = await put(alice.token, '/api/notifications/type/manualEntry/5', { read_at: '2024-01-01 00:00:00' })
  const byType = await put(alice.token, '/api/notifications/type/manualEntry', { seen_at: '2024-01-02 00:00:00' })

  assert.deepEqual(byId.json(), { status: 'success', data: 1 })
  assert.deepEqual(byType.json(), { status: 'success', data: 1 }, 'the record read just before is no longer unread')
  assert.deepEqual(await row(five), { seen_at: '2024-01-01 00:00:00', read_at: '2024-01-01 00:00:00' })
  assert.deepEqual(await row(six), { seen_at: '2024-01-02 00:00:00', read_at: null })
  assert.deepEqual(await row(post), { seen_at: null, read_at: null })
})

test("PUT one notification sets values, accepts null to mark it unread, and 404s for another user's", async () => {
  const { tenant, alice, bob } = await withTwoUsers()
  const id = await given.notification(db, tenant, alice.id)
  const bobs = await given.notification(db, tenant, bob.id)

  const read = await put(alice.token, `/api/notifications/${id}`, { read_at: '2024-07-01T10:00:00Z' })
  const unread = await put(alice.token, `/api/notifications/${id}`, { read_at: null })
  const foreign = await put(alice.token, `/api/notifications/${bobs}`, { read_at: '2024-07-01 10:00:00' })

  assert.equal(read.statusCode, 200)
  assert.equal(read.json().status, 'success')
  assert.equal(read.json().data.id, id)
  assert.equal(read.json().data.read_at, '2024-07-01 10:00:00')
  assert.equal(read.json().data.seen_at, '2024-07-01 10:00:00')
  assert.equal(unread.json().data.read_at, null)
  assert.equal(unread.json().data.seen_at, '2024-07-01 10:00:00', 'marking unread keeps seen_at')
  assert.equal(foreign.statusCode, 404)
  assert.deepEqual(await row(bobs), { seen_at: null, read_at: null })
})

test("notification settings are readable by any user; another tenant's is 404", async () => {
  const { alice } = await withTwoUsers()
  const otherTenant = await given.tenant(db)
  const foreign = await db
    .selectFrom('notification_settings')
    .select('id')
    .where('tenant_id', '=', otherTenant.id)
    .executeTakeFirstOrThrow()

  const list = await get(alice.token, '/api/notification-settings')
  const first = list.json()[0]
  const one = await get(alice.token, `/api/notification-settings/${first.id}?selects=key`)

  assert.equal(list.statusCode, 200)
  assert.deepEqual(
    list.json().map((s: { key: string; sort_number: number }) => [s.key, s.sort_number]),
    [
      ['general', 1],
      ['infoboard', 2],
      ['manuals', 3],
      ['tasks', 4],
      ['forms', 5],
      ['calendar', 6],
    ],
  )
  assert.deepEqual(Object.keys(first).sort(), ['id', 'key', 'sort_number'])
  assert.deepEqual(one.json(), { key: 'general' })
  assert.equal((await get(alice.token, `/api/notification-settings/${foreign.id}`)).statusCode, 404)
  assert.equal((await get(alice.token, '/api/notification-settings?relations=x')).statusCode, 422)
})

async function resetAs(token: string) {
  return call(await buildTestApp(), token, { method: 'DELETE', url: '/api/administration/notifications/reset' })
}

test('reset deletes every notification of the tenant only, keeps settings, and needs notifications.reset', async () => {
  const { tenant, alice, bob } = await withTwoUsers()
  const other: GivenTenant = await given.tenant(db)
  for (let i = 0; i < 3; i++) await given.notification(db, tenant, alice.id)
  await given.notification(db, tenant, bob.id)
  const kept = await given.notification(db, other, other.adminId)

  const denied = await resetAs(alice.token)
  const res = await resetAs(tenant.adminToken)

  assert.equal(denied.statusCode, 403)
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), { status: 'success', data: null })
  const left = await db.selectFrom('notifications').select('id').where('tenant_id', '=', tenant.id).execute()
  assert.equal(left.length, 0)
  assert.ok(await db.selectFrom('notifications').select('id').where('id', '=', kept).executeTakeFirst())
  const settings = await db
    .selectFrom('notification_settings')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .execute()
  assert.equal(settings.length, 6)
})

test('retention deletes read notifications older than the period, in batches, and nothing when unset', async () => {
  const { tenant, alice } = await withTwoUsers()
  const now = new Date('2030-01-31T00:00:00Z')
  const oldRead = await given.notification(db, tenant, alice.id, { read_at: '2030-01-01 00:00:00' })
  const recentRead = await given.notification(db, tenant, alice.id, { read_at: '2030-01-29 00:00:00' })
  const oldUnread = await given.notification(db, tenant, alice.id, { created_at: '2029-01-01 00:00:00' })
  const exists = async (id: string) =>
    (await db.selectFrom('notifications').select('id').where('id', '=', id).executeTakeFirst()) !== undefined

  assert.equal(await purgeReadNotifications(db, undefined, now), 0)
  assert.equal(await exists(oldRead), true)
  await purgeReadNotifications(db, 7, now)

  assert.equal(await exists(oldRead), false)
  assert.equal(await exists(recentRead), true)
  assert.equal(await exists(oldUnread), true)
})

test('the first page and the unread count are served from the per-user indexes without sorting', async () => {
  const { tenant, alice, bob } = await withTwoUsers()
  // alice among colleagues with many more records: the tenant's own indexes would read theirs too
  for (const [user, count] of [
    [alice, 2000],
    [bob, 20000],
  ] as const) {
    await sql`
      insert into notifications (tenant_id, notifiable_id, type, targetable_type, targetable_id, source_key, read_at, created_at)
      select ${tenant.id}, ${user.id}, 'genericNotification', 'genericNotification', g % 7, 'plan-' || g, case when g % 10 > 0 then now() end, now() - g * interval '1 minute'
      from generate_series(1, ${count}::int) g`.execute(db)
  }
  await sql`analyze notifications`.execute(db)
  const ctx = { db, tenantId: tenant.id }
  const parsed = parseListQuery(notificationResource, { limit: 20 }, ctx)
  const base = db
    .selectFrom('notifications as n')
    .where('n.tenant_id', '=', tenant.id)
    .where('n.notifiable_id', '=', alice.id)
  const page = applyListQuery(base, notificationResource, parsed, ctx).compile()
  const unread = base
    .where('n.read_at', 'is', null)
    .select((eb) => eb.fn.countAll().as('c'))
    .compile()

  // set local in a transaction, and on Citus propagated to the worker that plans the shard's query
  // (citus.propagate_set_commands): without it the worker plans by its own statistics of a small table
  const plans = await db.transaction().execute(async (conn) => {
    if (onCitusCluster) await sql`set local citus.propagate_set_commands = 'local'`.execute(conn)
    await sql`set local enable_seqscan = off`.execute(conn)
    const explain = async (q: { sql: string; parameters: readonly unknown[] }) =>
      (
        await conn.executeQuery<{ 'QUERY PLAN': string }>({
          sql: `explain ${q.sql}`,
          parameters: q.parameters,
          query: null as never,
        })
      ).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n')
    return { page: await explain(page), unread: await explain(unread) }
  })

  assert.match(plans.page, /notifications_user_(created|unread)_idx/)
  assert.doesNotMatch(
    plans.page,
    /Sort/,
    'the index order matches the default sort (created_at desc nulls last, id desc nulls last)',
  )
  assert.match(plans.unread, /notifications_user_unread_idx/)
})

test(
  'a send to listed users probes them by id in the plan the pool keeps (generic: planned without the values)',
  {
    skip: skipOnCitus(
      "it reads the single node's generic plan (plan_cache_mode=force_generic_plan), which Citus does not make; on Citus the pool plans each execution",
    ),
  },
  async () => {
    const tenant = await given.tenant(db)
    const someone = await given.user(db, tenant)
    // enough users and department members that scanning them all costs more than probing a few
    await sql`insert into users (tenant_id, username, password_hash, first_name, last_name, role_id, lang_id)
    select ${tenant.id}, 'plan-user-' || g, 'x', 'Plan', 'User', ${tenant.employeeRoleId}, 'en-US' from generate_series(1, 3000) g`.execute(
      db,
    )
    const departments = await Promise.all([1, 2, 3].map(() => given.department(db, tenant)))
    await sql`insert into department_users (tenant_id, department_id, user_id)
    select tenant_id, (${departments}::bigint[])[1 + id % 3], id from users where tenant_id = ${tenant.id} and username like 'plan-user-%'`.execute(
      db,
    )
    await sql`analyze users`.execute(db)
    await sql`analyze department_users`.execute(db)
    const spec = {
      tenantId: tenant.id,
      type: 'genericNotification',
      targetableType: 'genericNotification',
      targetableId: 1,
      sourceKey: 'plan',
      data: { title: 't', body: 'b', url: '/' },
    }
    const recipients = recipientsSql({ ...spec, recipients: { userIds: [someone.id] } }, undefined).compile(db)

    const plan = await genericPlanOf(db, recipients)

    assert.doesNotMatch(plan, /Seq Scan on users|Hash Join/, plan)
    assert.match(plan, /Index Cond: \(\(tenant_id = \$\d+\) AND \(id = /, plan)
  },
)

test('a list without limit, compiled once for every user, streams each user their own records past the first batch', async () => {
  const { tenant, alice, bob } = await withTwoUsers()
  await sql`insert into notifications (tenant_id, notifiable_id, type, targetable_type, targetable_id, source_key, data, read_at)
    select ${tenant.id}, ${alice.id}, 'genericNotification', 'genericNotification', g, 'bulk-' || g, '{"title":"t"}', case when g % 2 = 0 then now() end
    from generate_series(1, 1500) g`.execute(db)
  await given.notification(db, tenant, bob.id)
  await given.notification(db, tenant, bob.id, { read_at: '2024-01-01 00:00:00' })

  for (let round = 0; round < 2; round++) {
    const all = await get(alice.token, '/api/notifications?selects=id,targetable_id')
    assert.equal(all.statusCode, 200)
    const rows = all.json() as Array<{ targetable_id: number }>
    assert.equal(rows.length, 1500)
    assert.deepEqual(new Set(rows.map((r) => r.targetable_id)).size, 1500)
    const unread = await get(alice.token, '/api/notifications?selects=id,targetable_id&filter[read_at]=null')
    assert.equal(unread.json().length, 750)
    assert.ok(unread.json().every((r: { targetable_id: number }) => r.targetable_id % 2 === 1))
    const bobs = await get(bob.token, '/api/notifications?selects=id,targetable_id')
    assert.equal(bobs.json().length, 2)
    assert.equal(
      (await get(bob.token, '/api/notifications?selects=id,targetable_id&filter[read_at]=null')).json().length,
      1,
    )
  }
})
