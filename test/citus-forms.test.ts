/**
 * The statements of the two forms the code takes (docs/citus.md, "Two forms"): on a single PostgreSQL
 * generic plans and one-statement writes, on Citus the forms Citus plans. These run in `npm test` and
 * in `npm run test:citus`, on the API's own pool as `openDatabase` opens it at start (detecting Citus),
 * not on the test pool.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.js'
import { openDatabase, type DatabaseHandle } from '../src/platform/db/database.js'
import { recordDomainEvents } from '../src/platform/events/domain-events.js'
import { call, testConfig } from './helpers/build-test-app.js'
import { given } from './helpers/given.js'
import { testDatabaseUrl, testDb } from './helpers/test-database.js'

const db = testDb()
let handle: DatabaseHandle
let app: FastifyInstance

before(async () => {
  handle = await openDatabase({ url: testDatabaseUrl(), dataDir: '', poolSize: 2 })
  // every request looks its actor up (no cache): the lookup's own statement runs each time
  app = await buildApp({ config: testConfig({ AUTH_CACHE: 'false' }), db: handle.db })
  await app.ready()
})

after(async () => {
  await app.close()
  await handle.close()
})

// Citus 13.2 refused the lookup's generic plan (plan_cache_mode=force_generic_plan, the single node's
// pool): "could not create distributed plan" for the department ids' subquery in its select list
test('the actor lookup answers on the API pool, past the five executions after which a plan may turn generic', async () => {
  const tenant = await given.tenant(db)
  const department = await given.department(db, tenant)
  const user = await given.user(db, tenant, { departmentIds: [department] })
  for (let i = 0; i < 8; i++) {
    const res = await call(app, user.token, { method: 'GET', url: '/api/users/current?selects=id,username' })
    assert.equal(res.statusCode, 200, `request ${i + 1}: ${res.body}`)
    assert.equal(res.json().id, user.id)
  }
  const admin = await call(app, tenant.adminToken, {
    method: 'GET',
    url: `/api/administration/access/explain?user_id=${user.id}&target_entity=folder&target_entity_id=1`,
  })
  assert.notEqual(admin.statusCode, 500, admin.body)
})

async function activeAutomation(tenantId: number, event: string): Promise<void> {
  await db
    .insertInto('automations')
    .values({
      tenant_id: tenantId,
      name: `on ${event}`,
      event,
      active: true,
      actions: JSON.stringify([
        { type: 'webhook', config: { url: 'https://93.184.216.34/hooks', method: 'POST', headers: {} } },
      ]) as never,
    } as never)
    .execute()
}

const deliveries = async (tenantId: number) =>
  (await db.selectFrom('webhook_deliveries').select(['event_type']).where('tenant_id', '=', tenantId).execute()).map(
    (r) => r.event_type,
  )

// Citus 13.2 sent the events' insert (an INSERT … SELECT over unnest, with the automations' probe in
// its RETURNING) to a worker with the parameters it no longer referenced: "could not determine data
// type of parameter $1"
test("events recorded with an active automation of the tenant: the probe in the insert's answer holds", async () => {
  const tenant = await given.tenant(db)
  await activeAutomation(tenant.id, 'user.updated')
  const recorded: string[] = []
  for (let i = 0; i < 7; i++) {
    const ids = await handle.db.transaction().execute((trx) =>
      recordDomainEvents(trx, [
        {
          type: 'user.created',
          tenantId: tenant.id,
          actorId: tenant.adminId,
          subjectType: 'user',
          subjectId: 1,
          audit: { id: [null, 1] },
        },
        {
          type: 'user.updated',
          tenantId: tenant.id,
          actorId: tenant.adminId,
          subjectType: 'user',
          subjectId: 1,
          audit: { username: ['a', 'b'] },
        },
      ]),
    )
    assert.equal(ids.length, 2)
    assert.notEqual(ids[0], ids[1])
    recorded.push(ids[1]!)
  }
  // one delivery per heeded event (the second of each recording), none for the other
  const delivered = await db
    .selectFrom('webhook_deliveries')
    .select(['event_type', 'event_id'])
    .where('tenant_id', '=', tenant.id)
    .execute()
  assert.deepEqual(
    delivered.map((d) => d.event_type),
    Array(7).fill('user.updated'),
  )
  // each id answered for the event it belongs to: the deliveries name the second id of each recording
  assert.deepEqual(new Set(delivered.map((d) => d.event_id)), new Set(recorded))
})

async function shareEvent(tenant: Awaited<ReturnType<typeof given.tenant>>) {
  const event = await given.content(db, tenant, 'calendar_events', {
    title: 'Kick-off',
    starts_at: '2026-01-05 09:00',
    ends_at: '2026-01-05 10:00',
  })
  return call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/administration/shared-items',
    payload: {
      type: 'calendarEvent',
      targetable_type: 'calendarEvent',
      targetable_id: event,
      entity_permissions: [{ permission_entity: 'user', permission_entity_id: tenant.adminId }],
    },
  })
}

test('one-statement writes (a shared item, a small send) with an active automation of the tenant listening', async () => {
  const tenant = await given.tenant(db)
  await activeAutomation(tenant.id, '*')
  const shared = await shareEvent(tenant)
  assert.equal(shared.statusCode, 201, shared.body)
  const sent = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/notifications',
    payload: { title: 'Hi', body: 'There', url: '/home', user_ids: [tenant.adminId] },
  })
  assert.equal(sent.statusCode, 202, sent.body)
  const types = await deliveries(tenant.id)
  assert.ok(types.length >= 2, JSON.stringify(types))

  // and without any automation: the one-statement way on a single node
  const quiet = await given.tenant(db)
  const res = await shareEvent(quiet)
  assert.equal(res.statusCode, 201, res.body)
})
