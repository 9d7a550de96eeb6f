import assert from 'node:assert/strict'
import { test } from 'node:test'
import { call } from './helpers/build-test-app.js'
import { given } from './helpers/given.js'
import { testDb } from './helpers/test-database.js'
import { transactions, watchedApp, writes } from './helpers/watched-app.js'

// The create of a shared item is written by one statement when nothing needs a transaction
// (decision 0005, "Sixth pass"); these tests watch the statements the app sends.
const db = testDb()
const { app, watch } = await watchedApp()
test.after(() => app.close())

async function setup() {
  const tenant = await given.tenant(db)
  const sharerRole = await given.role(db, tenant, ['sharedItems.administrate', 'calendar.view'])
  const sharer = await given.user(db, tenant, { roleId: sharerRole })
  const employee = await given.user(db, tenant)
  const event = await given.content(db, tenant, 'calendar_events', { title: 'Kick-off', starts_at: '2026-01-05 09:00', ends_at: '2026-01-05 10:00' })
  const body = {
    type: 'calendarEvent', targetable_type: 'calendarEvent', targetable_id: event,
    entity_permissions: [{ key: 'view', permission_entity: 'role', permission_entity_id: sharerRole }, { permission_entity: 'user', permission_entity_id: employee.id }],
  }
  return { tenant, sharer, body }
}

/** Creates the item; the statements its request sent. */
async function createWatched(token: string, body: object) {
  const { result: res, statements } = await watch(() => call(app, token, { method: 'POST', url: '/api/administration/shared-items', payload: body }))
  return { res, statements }
}

test('a create with grants is one statement with no transaction of its own, and its events show the grants as the API does', async () => {
  const { tenant, sharer, body } = await setup()

  const { res, statements } = await createWatched(sharer.token, body)

  assert.equal(res.statusCode, 201, res.body)
  assert.equal(writes(statements).length, 1, `one writing statement, sent:\n${statements.join('\n---\n')}`)
  assert.deepEqual(transactions(statements), [])
  const id = res.json().id as string
  const grants = (await call(app, sharer.token, { method: 'GET', url: `/api/entity-permissions/sharedItem/${id}` })).json()
  assert.equal(grants.length, 2)
  const events = await db.selectFrom('domain_events').select(['type', 'subject_id', 'data']).where('tenant_id', '=', tenant.id)
    .where('type', '=', 'entityPermission.created').orderBy('id').execute()
  // the event's grant (ids reserved, timestamps set before the insert) is the stored grant as the API shows it
  const byId = (a: { id: number }, b: { id: number }) => a.id - b.id
  assert.deepEqual(events.map((e) => e.data as { id: number }).sort(byId), [...grants].sort(byId))
  assert.deepEqual(events.map((e) => e.subject_id).sort(), grants.map((g: { id: number }) => String(g.id)).sort())
  const audit = await db.selectFrom('audit_log').select(['action', 'target_id']).where('tenant_id', '=', tenant.id).orderBy('id').execute()
  assert.deepEqual(audit.map((a) => a.action), ['entity_permission.create', 'entity_permission.create', 'shared_item.create'])
  assert.equal(audit[2]!.target_id, id)
})

for (const listening of ['sharedItem.created', 'entityPermission.created', '*']) {
  test(`with an active automation on ${listening}, the create takes a transaction and its delivery commits with it`, async () => {
    const { tenant, sharer, body } = await setup()
    const actions = [{ type: 'webhook', config: { url: 'http://127.0.0.1:9/hook', method: 'POST', headers: {} } }]
    const { id: automationId } = await db.insertInto('automations')
      .values({ tenant_id: tenant.id, name: 'listens', event: listening, actions: JSON.stringify(actions) }).returning('id').executeTakeFirstOrThrow()

    const { res, statements } = await createWatched(sharer.token, body)

    assert.equal(res.statusCode, 201, res.body)
    assert.equal(transactions(statements).length, 1)
    const deliveries = await db.selectFrom('webhook_deliveries').select(['event_type', 'event_data'])
      .where('tenant_id', '=', tenant.id).where('automation_id', '=', automationId).execute()
    const expected = listening === '*' ? ['entityPermission.created', 'entityPermission.created', 'sharedItem.created']
      : listening === 'sharedItem.created' ? ['sharedItem.created'] : ['entityPermission.created', 'entityPermission.created']
    assert.deepEqual(deliveries.map((d) => d.event_type).sort(), expected)
    assert.equal((await db.selectFrom('shared_items').select('id').where('tenant_id', '=', tenant.id).execute()).length, 1)
  })
}

test('an inactive automation does not take the create off its one statement', async () => {
  const { tenant, sharer, body } = await setup()
  await db.insertInto('automations').values({ tenant_id: tenant.id, name: 'off', event: '*', active: false, actions: '[]' }).execute()

  const { res, statements } = await createWatched(sharer.token, body)

  assert.equal(res.statusCode, 201, res.body)
  assert.deepEqual(transactions(statements), [])
})

test('a grant to a missing user leaves the one statement without a write: the transactional way answers 422 and writes nothing', async () => {
  const { tenant, sharer, body } = await setup()

  const { res, statements } = await createWatched(sharer.token, { ...body, entity_permissions: [...body.entity_permissions, { permission_entity: 'user', permission_entity_id: 987654321 }] })

  assert.equal(res.statusCode, 422, res.body)
  assert.deepEqual(Object.keys(res.json().errors), ['entity_permissions.2.permission_entity_id'])
  assert.equal(transactions(statements).length, 1, 'the one statement wrote nothing, the transaction named the problem')
  for (const table of ['shared_items', 'entity_permissions', 'domain_events', 'audit_log'] as const) {
    assert.equal((await db.selectFrom(table).select('tenant_id').where('tenant_id', '=', tenant.id).execute()).length, 0, table)
  }
})
