import assert from 'node:assert/strict'
import { test } from 'node:test'
import { call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { transactions, watchedApp, writes } from '../../../test/helpers/watched-app.js'
import { onCitusCluster } from '../../../test/helpers/citus.js'

// The create of a shared item is written by one statement when nothing needs a transaction
// (decision 0005, "Sixth pass"); these tests watch the statements the app sends.
const db = testDb()
const { app, watch } = await watchedApp()
test.after(() => app.close())

async function setup() {
  const tenant = await given.tenant(db)
  await given.exemptFromLimits(db, tenant)
  const sharerRole = await given.role(db, tenant, ['sharedItems.administrate', 'calendar.view'])
  const sharer = await given.user(db, tenant, { roleId: sharerRole })
  const employee = await given.user(db, tenant)
  const event = await given.content(db, tenant, 'calendar_events', {
    title: 'Kick-off',
    starts_at: '2026-01-05 09:00',
    ends_at: '2026-01-05 10:00',
  })
  const body = {
    type: 'calendarEvent',
    targetable_type: 'calendarEvent',
    targetable_id: event,
    entity_permissions: [
      { key: 'view', permission_entity: 'role', permission_entity_id: sharerRole },
      { permission_entity: 'user', permission_entity_id: employee.id },
    ],
  }
  return { tenant, sharer, body }
}

/**
 * The create took the one-statement way. On Citus the transactional way instead (docs/citus.md, "Two
 * forms"): Citus evaluates every data-modifying CTE from the coordinator, so the create is statements
 * routed whole, in one transaction.
 */
function assertOneStatementForm(statements: string[]) {
  const sent = `sent:\n${statements.join('\n---\n')}`
  if (onCitusCluster) return assert.equal(transactions(statements).length, 1, sent)
  assert.equal(writes(statements).length, 1, `one writing statement, ${sent}`)
  assert.deepEqual(transactions(statements), [])
}

/** Creates the item; the statements its request sent. */
async function createWatched(token: string, body: object) {
  const { result: res, statements } = await watch(() =>
    call(app, token, { method: 'POST', url: '/api/administration/shared-items', payload: body }),
  )
  return { res, statements }
}

test('a create with grants is one statement with no transaction of its own, and its events show the grants as the API does', async () => {
  const { tenant, sharer, body } = await setup()

  const { res, statements } = await createWatched(sharer.token, body)

  assert.equal(res.statusCode, 201, res.body)
  assertOneStatementForm(statements)
  const id = res.json().id as string
  const grants = (
    await call(app, sharer.token, { method: 'GET', url: `/api/entity-permissions/sharedItem/${id}` })
  ).json()
  assert.equal(grants.length, 2)
  const events = await db
    .selectFrom('domain_events')
    .select(['type', 'subject_id', 'data'])
    .where('tenant_id', '=', tenant.id)
    .where('type', '=', 'entityPermission.created')
    .orderBy('id')
    .execute()
  // the event's grant (ids reserved, timestamps set before the insert) is the stored grant as the API shows it
  const byId = (a: { id: number }, b: { id: number }) => a.id - b.id
  assert.deepEqual(events.map((e) => e.data as { id: number }).sort(byId), [...grants].sort(byId))
  assert.deepEqual(events.map((e) => e.subject_id).sort(), grants.map((g: { id: number }) => String(g.id)).sort())
  const audit = await db
    .selectFrom('audit_log')
    .select(['action', 'target_id'])
    .where('tenant_id', '=', tenant.id)
    .orderBy('id')
    .execute()
  assert.deepEqual(
    audit.map((a) => a.action),
    ['entity_permission.create', 'entity_permission.create', 'shared_item.create'],
  )
  assert.equal(audit[2]!.target_id, id)
})

for (const listening of ['sharedItem.created', 'entityPermission.created', '*']) {
  test(`with an active automation on ${listening}, the create takes a transaction and its delivery commits with it`, async () => {
    const { tenant, sharer, body } = await setup()
    const actions = [{ type: 'webhook', config: { url: 'http://127.0.0.1:9/hook', method: 'POST', headers: {} } }]
    const { id: automationId } = await db
      .insertInto('automations')
      .values({ tenant_id: tenant.id, name: 'listens', event: listening, actions: JSON.stringify(actions) })
      .returning('id')
      .executeTakeFirstOrThrow()

    const { res, statements } = await createWatched(sharer.token, body)

    assert.equal(res.statusCode, 201, res.body)
    assert.equal(transactions(statements).length, 1)
    const deliveries = await db
      .selectFrom('webhook_deliveries')
      .select(['event_type', 'event_data'])
      .where('tenant_id', '=', tenant.id)
      .where('automation_id', '=', automationId)
      .execute()
    const expected =
      listening === '*'
        ? ['entityPermission.created', 'entityPermission.created', 'sharedItem.created']
        : listening === 'sharedItem.created'
          ? ['sharedItem.created']
          : ['entityPermission.created', 'entityPermission.created']
    assert.deepEqual(deliveries.map((d) => d.event_type).sort(), expected)
    assert.equal(
      (await db.selectFrom('shared_items').select('id').where('tenant_id', '=', tenant.id).execute()).length,
      1,
    )
  })
}

test('an inactive automation does not take the create off its one statement', async () => {
  const { tenant, sharer, body } = await setup()
  await db
    .insertInto('automations')
    .values({ tenant_id: tenant.id, name: 'off', event: '*', active: false, actions: '[]' })
    .execute()

  const { res, statements } = await createWatched(sharer.token, body)

  assert.equal(res.statusCode, 201, res.body)
  assertOneStatementForm(statements)
})

test('a grant to a missing user leaves the one statement without a write: the transactional way answers 422 and writes nothing', async () => {
  const { tenant, sharer, body } = await setup()

  const { res, statements } = await createWatched(sharer.token, {
    ...body,
    entity_permissions: [...body.entity_permissions, { permission_entity: 'user', permission_entity_id: 987654321 }],
  })

  assert.equal(res.statusCode, 422, res.body)
  assert.deepEqual(Object.keys(res.json().errors), ['entity_permissions.2.permission_entity_id'])
  assert.equal(transactions(statements).length, 1, 'the one statement wrote nothing, the transaction named the problem')
  for (const table of ['shared_items', 'entity_permissions', 'domain_events', 'audit_log'] as const) {
    assert.equal(
      (await db.selectFrom(table).select('tenant_id').where('tenant_id', '=', tenant.id).execute()).length,
      0,
      table,
    )
  }
})

test('creates compiled once per shape each write their own values: with and without grants, other targets, grantees and user agents', async () => {
  const { tenant, sharer, body } = await setup()
  const otherEvent = await given.content(db, tenant, 'calendar_events', {
    title: 'Review',
    starts_at: '2026-02-05 09:00',
    ends_at: '2026-02-05 10:00',
  })
  const otherEmployee = await given.user(db, tenant)
  const create = async (payload: object, agent: string) => {
    const { result: res, statements } = await watch(() =>
      call(app, sharer.token, {
        method: 'POST',
        url: '/api/administration/shared-items',
        payload,
        headers: { 'user-agent': agent },
      }),
    )
    assert.equal(res.statusCode, 201, res.body)
    assertOneStatementForm(statements)
    return res.json() as { id: string; targetable_id: number }
  }

  const first = await create(body, 'agent-one')
  const { entity_permissions: _, ...withoutGrants } = body
  const second = await create({ ...withoutGrants, targetable_id: otherEvent }, 'agent-two')
  const third = await create(
    {
      ...body,
      targetable_id: otherEvent,
      entity_permissions: [{ permission_entity: 'user', permission_entity_id: otherEmployee.id }],
    },
    'agent-three',
  )

  assert.deepEqual(
    [first.targetable_id, second.targetable_id, third.targetable_id],
    [body.targetable_id, otherEvent, otherEvent],
  )
  const grants = await db
    .selectFrom('entity_permissions')
    .select(['target_entity_id', 'permission_entity', 'permission_entity_id'])
    .where('tenant_id', '=', tenant.id)
    .where('target_entity', '=', 'sharedItem')
    .orderBy('id')
    .execute()
  assert.deepEqual(
    grants.map((g) => [g.target_entity_id, g.permission_entity, Number(g.permission_entity_id)]),
    [
      [first.id, 'role', body.entity_permissions[0]!.permission_entity_id],
      [first.id, 'user', body.entity_permissions[1]!.permission_entity_id],
      [third.id, 'user', otherEmployee.id],
    ],
  )
  const audit = await db
    .selectFrom('audit_log')
    .select(['action', 'target_id', 'user_agent', 'actor_id'])
    .where('tenant_id', '=', tenant.id)
    .orderBy('id')
    .execute()
  assert.deepEqual(
    audit.map((a) => [a.action, a.user_agent, Number(a.actor_id)]),
    [
      ['entity_permission.create', 'agent-one', sharer.id],
      ['entity_permission.create', 'agent-one', sharer.id],
      ['shared_item.create', 'agent-one', sharer.id],
      ['shared_item.create', 'agent-two', sharer.id],
      ['entity_permission.create', 'agent-three', sharer.id],
      ['shared_item.create', 'agent-three', sharer.id],
    ],
  )
  assert.deepEqual(
    audit.filter((a) => a.action === 'shared_item.create').map((a) => a.target_id),
    [first.id, second.id, third.id],
  )
  const events = await db
    .selectFrom('domain_events')
    .select(['type', 'subject_id'])
    .where('tenant_id', '=', tenant.id)
    .where('type', '=', 'sharedItem.created')
    .orderBy('occurred_at')
    .execute()
  assert.deepEqual(events.map((e) => e.subject_id).sort(), [first.id, second.id, third.id].sort())
})
