import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { givenTarget, useTestShareTargets } from '../../../test/helpers/shared-items-support.js'
import { SHARED_ITEM_TYPES } from './index.js'

const db = testDb()
const app = await buildTestApp()
await useTestShareTargets(db)

const ADMIN = '/api/administration/shared-items'
const get = (token: string, url: string) => call(app, token, { method: 'GET', url })
const create = (token: string, payload: object) => call(app, token, { method: 'POST', url: ADMIN, payload })
const update = (token: string, id: string, payload: object) =>
  call(app, token, { method: 'PUT', url: `${ADMIN}/${id}`, payload })
const remove = (token: string, id: string) => call(app, token, { method: 'DELETE', url: `${ADMIN}/${id}` })

async function ids(token: string, url: string): Promise<string[]> {
  const res = await get(token, url)
  assert.equal(res.statusCode, 200, res.body)
  return res
    .json()
    .map((item: { id: string }) => item.id)
    .sort()
}

/** A tenant with a sharer (sharedItems.administrate + calendar/filemanager view) and a plain employee. */
async function setup() {
  const tenant = await given.tenant(db)
  const sharerRole = await given.role(db, tenant, [
    'sharedItems.administrate',
    'calendar.view',
    'filemanager.view',
    'forms.view',
    'infoboard.view',
    'manuals.view',
    'tasks.view',
  ])
  const sharer = await given.user(db, tenant, { roleId: sharerRole })
  const employee = await given.user(db, tenant)
  return { tenant, sharer, sharerRole, employee }
}

const EXPECTED_DEFAULTS: Record<string, { redirect_type: string; config: Record<string, unknown> }> = {
  calendarEvent: { redirect_type: 'redirect', config: {} },
  filemanagerDirectory: { redirect_type: 'redirectWithGrantToken', config: { include_subdirectories: true } },
  filemanagerFile: { redirect_type: 'redirectWithGrantToken', config: {} },
  form: { redirect_type: 'redirect', config: {} },
  formMessage: { redirect_type: 'redirect', config: {} },
  infoboardComment: { redirect_type: 'redirect', config: {} },
  infoboardPost: { redirect_type: 'redirect', config: { show_comments: true } },
  manualChapter: { redirect_type: 'redirect', config: { include_entries: true } },
  manualEntry: { redirect_type: 'redirect', config: { show_history: false } },
  taskExecution: { redirect_type: 'redirect', config: {} },
}

test('the type table covers exactly the ten spec types', () => {
  assert.deepEqual(Object.keys(SHARED_ITEM_TYPES).sort(), Object.keys(EXPECTED_DEFAULTS).sort())
})

for (const [type, expected] of Object.entries(EXPECTED_DEFAULTS)) {
  test(`creating a ${type} item applies its default redirect type and config`, async () => {
    const { tenant, sharer } = await setup()
    const target = await givenTarget(db, tenant, type)

    const res = await create(sharer.token, { type, targetable_type: type, targetable_id: target })

    assert.equal(res.statusCode, 201, res.body)
    const item = res.json()
    assert.equal(item.redirect_type, expected.redirect_type)
    assert.deepEqual(item.config, expected.config)
    assert.equal(item.user_id, sharer.id)
    assert.equal(item.targetable_type, type)
    assert.equal(item.targetable_id, target)
    assert.equal(item.url, `http://api.test/shared/${item.id}`)
    assert.equal(item.deleted_at, null)
  })
}

test('create fills omitted config keys from the defaults and keeps the sent ones', async () => {
  const { tenant, sharer } = await setup()
  const target = await givenTarget(db, tenant, 'manualEntry')

  const res = await create(sharer.token, {
    type: 'manualEntry',
    targetable_type: 'manualEntry',
    targetable_id: target,
    config: { show_history: true },
    redirect_type: 'none',
  })

  assert.equal(res.statusCode, 201, res.body)
  assert.deepEqual(res.json().config, { show_history: true })
  assert.equal(res.json().redirect_type, 'none')
})

test('bad create input answers 422 naming the field and creates nothing', async () => {
  const { tenant, sharer } = await setup()
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const post = await givenTarget(db, tenant, 'infoboardPost')
  const cases: Array<[string, object, string]> = [
    ['unknown type', { type: 'poll', targetable_type: 'calendarEvent', targetable_id: event }, 'type'],
    [
      'alias not allowed for the type',
      { type: 'calendarEvent', targetable_type: 'infoboardPost', targetable_id: post },
      'targetable_type',
    ],
    ['unknown alias', { type: 'calendarEvent', targetable_type: 'user', targetable_id: sharer.id }, 'targetable_type'],
    ['missing target id', { type: 'calendarEvent', targetable_type: 'calendarEvent' }, 'targetable_id'],
    ['missing target type', { type: 'calendarEvent', targetable_id: event }, 'targetable_type'],
    [
      'target that does not exist',
      { type: 'calendarEvent', targetable_type: 'calendarEvent', targetable_id: 999999999 },
      'targetable_id',
    ],
    [
      'target of the right alias but another kind',
      { type: 'calendarEvent', targetable_type: 'calendarEvent', targetable_id: post },
      'targetable_id',
    ],
    [
      'malformed target id',
      { type: 'calendarEvent', targetable_type: 'calendarEvent', targetable_id: 'abc' },
      'targetable_id',
    ],
    [
      'unknown config key',
      { type: 'infoboardPost', targetable_type: 'infoboardPost', targetable_id: post, config: { show_likes: true } },
      'config.show_likes',
    ],
    [
      'config key on a type without config',
      { type: 'calendarEvent', targetable_type: 'calendarEvent', targetable_id: event, config: { x: 1 } },
      'config.x',
    ],
    [
      'config value of the wrong type',
      {
        type: 'infoboardPost',
        targetable_type: 'infoboardPost',
        targetable_id: post,
        config: { show_comments: 'yes' },
      },
      'config.show_comments',
    ],
    [
      'config that is not an object',
      { type: 'infoboardPost', targetable_type: 'infoboardPost', targetable_id: post, config: [true] },
      'config',
    ],
    [
      'invalid redirect type',
      { type: 'calendarEvent', targetable_type: 'calendarEvent', targetable_id: event, redirect_type: 'always' },
      'redirect_type',
    ],
    [
      'unknown body key',
      { type: 'calendarEvent', targetable_type: 'calendarEvent', targetable_id: event, colour: 'red' },
      'colour',
    ],
    [
      'bad grant element',
      {
        type: 'calendarEvent',
        targetable_type: 'calendarEvent',
        targetable_id: event,
        entity_permissions: [{ key: 'write', permission_entity: 'user', permission_entity_id: sharer.id }],
      },
      'entity_permissions.0.key',
    ],
    [
      'grant to a missing user',
      {
        type: 'calendarEvent',
        targetable_type: 'calendarEvent',
        targetable_id: event,
        entity_permissions: [{ permission_entity: 'user', permission_entity_id: 999999999 }],
      },
      'entity_permissions.0.permission_entity_id',
    ],
  ]
  for (const [name, body, field] of cases) {
    const res = await create(sharer.token, body)
    assert.equal(res.statusCode, 422, `${name}: ${res.body}`)
    assert.ok(Object.hasOwn(res.json().errors, field), `${name}: expected errors.${field} in ${res.body}`)
  }
  assert.deepEqual(await ids(tenant.adminToken, ADMIN), [])
  const events = await db
    .selectFrom('domain_events')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .where('type', 'like', 'sharedItem.%')
    .execute()
  assert.equal(events.length, 0)
})

test('the "may share" rule: a target the requester cannot view is refused with 403', async () => {
  const { tenant, sharer, employee } = await setup()
  const noCalendarRole = await given.role(db, tenant, ['sharedItems.administrate'])
  const noCalendar = await given.user(db, tenant, { roleId: noCalendarRole })
  const open = await givenTarget(db, tenant, 'calendarEvent')
  const restricted = await givenTarget(db, tenant, 'calendarEvent')
  await given.grant(db, tenant, { key: 'view', to: ['user', employee.id], on: ['calendarEvent', restricted] })
  const mine = await givenTarget(db, tenant, 'calendarEvent')
  await given.grant(db, tenant, { key: 'view', to: ['user', sharer.id], on: ['calendarEvent', mine] })
  const body = (id: number) => ({ type: 'calendarEvent', targetable_type: 'calendarEvent', targetable_id: id })

  const withoutModule = await create(noCalendar.token, body(open))
  const restrictedToOthers = await create(sharer.token, body(restricted))
  const grantedToMe = await create(sharer.token, body(mine))
  const asAdmin = await create(tenant.adminToken, body(restricted))

  assert.equal(withoutModule.statusCode, 403, withoutModule.body)
  assert.equal(withoutModule.json().code, 'target_not_shareable')
  assert.equal(restrictedToOthers.statusCode, 403, restrictedToOthers.body)
  assert.equal(grantedToMe.statusCode, 201, grantedToMe.body)
  assert.equal(asAdmin.statusCode, 201, asAdmin.body)
  assert.equal((await ids(tenant.adminToken, ADMIN)).length, 2)
})

test('the administration endpoints need sharedItems.administrate(All)', async () => {
  const { tenant, employee } = await setup()
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const item = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })

  const results = await Promise.all([
    create(employee.token, { type: 'calendarEvent', targetable_type: 'calendarEvent', targetable_id: event }),
    get(employee.token, ADMIN),
    get(employee.token, `${ADMIN}/${item}`),
    update(employee.token, item, { redirect_type: 'none' }),
    remove(employee.token, item),
    call(app, employee.token, { method: 'POST', url: `${ADMIN}/${item}/restore` }),
  ])

  for (const res of results) assert.equal(res.statusCode, 403, res.body)
  assert.equal((await get(employee.token, `/api/shared-items/${item}`)).statusCode, 200)
})

test('update keeps type and user_id, keeps or replaces config, and checks a new target', async () => {
  const { tenant, sharer, employee } = await setup()
  const post = await givenTarget(db, tenant, 'infoboardPost')
  const otherPost = await givenTarget(db, tenant, 'infoboardPost')
  const hiddenPost = await givenTarget(db, tenant, 'infoboardPost')
  await given.grant(db, tenant, { key: 'view', to: ['user', employee.id], on: ['infoboardPost', hiddenPost] })
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const created = (
    await create(sharer.token, {
      type: 'infoboardPost',
      targetable_type: 'infoboardPost',
      targetable_id: post,
      config: { show_comments: false },
    })
  ).json()

  const changeType = await update(sharer.token, created.id, { type: 'calendarEvent' })
  const sameType = await update(tenant.adminToken, created.id, {
    type: 'infoboardPost',
    user_id: tenant.adminId,
    redirect_type: 'none',
  })
  const keepsConfig = sameType.json().config
  const replaceConfig = await update(sharer.token, created.id, { config: {} })
  const badConfig = await update(sharer.token, created.id, { config: { show_comments: 1 } })
  const retargetAlias = await update(sharer.token, created.id, {
    targetable_type: 'calendarEvent',
    targetable_id: event,
  })
  const retargetHidden = await update(sharer.token, created.id, { targetable_id: hiddenPost })
  const retarget = await update(sharer.token, created.id, { targetable_id: otherPost })

  assert.equal(changeType.statusCode, 422, changeType.body)
  assert.ok(changeType.json().errors.type)
  assert.equal(sameType.statusCode, 200, sameType.body)
  assert.equal(sameType.json().user_id, sharer.id)
  assert.equal(sameType.json().redirect_type, 'none')
  assert.deepEqual(keepsConfig, { show_comments: false })
  assert.deepEqual(replaceConfig.json().config, { show_comments: true })
  assert.equal(badConfig.statusCode, 422)
  assert.ok(badConfig.json().errors['config.show_comments'])
  assert.equal(retargetAlias.statusCode, 422, retargetAlias.body)
  assert.ok(retargetAlias.json().errors.targetable_type)
  assert.equal(retargetHidden.statusCode, 403, retargetHidden.body)
  assert.equal(retarget.statusCode, 200, retarget.body)
  assert.equal(retarget.json().targetable_id, otherPost)
  assert.equal(retarget.json().type, 'infoboardPost')
})

test('entity_permissions are synchronized on create and update, keeping unchanged grants', async () => {
  const { tenant, sharer, employee } = await setup()
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const dept = await given.department(db, tenant, [employee.id])
  const res = await create(sharer.token, {
    type: 'calendarEvent',
    targetable_type: 'calendarEvent',
    targetable_id: event,
    entity_permissions: [
      { key: 'view', permission_entity: 'user', permission_entity_id: employee.id },
      { key: 'administrate', permission_entity: 'user', permission_entity_id: sharer.id },
    ],
  })
  const id = res.json().id
  const before = (await get(tenant.adminToken, `${ADMIN}/${id}?relations=entityPermissions`)).json().entityPermissions

  const updated = await update(sharer.token, id, {
    entity_permissions: [
      { key: 'administrate', permission_entity: 'user', permission_entity_id: sharer.id },
      { permission_entity: 'department', permission_entity_id: dept },
    ],
  })
  const after = (await get(tenant.adminToken, `${ADMIN}/${id}?relations=entityPermissions`)).json().entityPermissions
  const viaGrantsApi = await get(tenant.adminToken, `/api/entity-permissions/sharedItem/${id}`)

  assert.equal(res.statusCode, 201, res.body)
  assert.equal(before.length, 2)
  assert.equal(updated.statusCode, 200, updated.body)
  const adminGrant = (list: Array<{ key: string; id: number }>) => list.find((g) => g.key === 'administrate')!.id
  assert.equal(adminGrant(after), adminGrant(before))
  assert.deepEqual(
    after.map((g: { key: string; permission_entity: string }) => `${g.key}:${g.permission_entity}`).sort(),
    ['administrate:user', 'view:department'],
  )
  assert.equal(viaGrantsApi.statusCode, 200, viaGrantsApi.body)
  assert.equal(viaGrantsApi.json().length, 2)
})

test('a create with grants writes the item, each grant once, their events and audit records together', async () => {
  const { tenant, sharer, sharerRole, employee } = await setup()
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const viewOfRole = { key: 'view', permission_entity: 'role', permission_entity_id: sharerRole }

  const res = await create(sharer.token, {
    type: 'calendarEvent',
    targetable_type: 'calendarEvent',
    targetable_id: event,
    entity_permissions: [viewOfRole, { permission_entity: 'user', permission_entity_id: employee.id }, viewOfRole],
  })

  assert.equal(res.statusCode, 201, res.body)
  const id = res.json().id as string
  assert.deepEqual(
    res.json(),
    (await get(tenant.adminToken, `/api/shared-items/${id}`)).json(),
    'the response is the item as a read shows it',
  )
  const grants = await db
    .selectFrom('entity_permissions')
    .select(['id', 'key', 'permission_entity', 'permission_entity_id', 'target_entity', 'target_entity_id'])
    .where('tenant_id', '=', tenant.id)
    .orderBy('id')
    .execute()
  assert.deepEqual(
    grants.map((g) => [
      g.key,
      g.permission_entity,
      Number(g.permission_entity_id),
      g.target_entity,
      g.target_entity_id,
    ]),
    [
      ['view', 'role', sharerRole, 'sharedItem', id],
      ['view', 'user', employee.id, 'sharedItem', id],
    ],
  )
  const events = await db
    .selectFrom('domain_events')
    .select(['type', 'subject_type', 'subject_id', 'actor_id', 'data'])
    .where('tenant_id', '=', tenant.id)
    .execute()
  assert.deepEqual(
    events.map((e) => `${e.type}:${e.subject_id}:${e.actor_id}`).sort(),
    [
      `entityPermission.created:${grants[0]!.id}:${sharer.id}`,
      `entityPermission.created:${grants[1]!.id}:${sharer.id}`,
      `sharedItem.created:${id}:${sharer.id}`,
    ].sort(),
  )
  assert.equal(
    (events.find((e) => e.type === 'sharedItem.created')!.data as { entity_permissions: number }).entity_permissions,
    3,
  )
  const audit = await db
    .selectFrom('audit_log')
    .select(['action', 'target_type', 'target_id', 'actor_id', 'changes', 'request_id'])
    .where('tenant_id', '=', tenant.id)
    .orderBy('id')
    .execute()
  assert.deepEqual(
    audit.map((a) => [a.action, a.target_type, a.target_id, Number(a.actor_id)]),
    [
      ['entity_permission.create', 'entity_permission', String(grants[0]!.id), sharer.id],
      ['entity_permission.create', 'entity_permission', String(grants[1]!.id), sharer.id],
      ['shared_item.create', 'shared_item', id, sharer.id],
    ],
  )
  assert.deepEqual(audit[0]!.changes, {
    id: [null, grants[0]!.id],
    key: [null, 'view'],
    permission_entity: [null, 'role'],
    permission_entity_id: [null, sharerRole],
    target_entity: [null, 'sharedItem'],
    target_entity_id: [null, id],
  })
  assert.deepEqual(audit[2]!.changes, {
    user_id: [null, sharer.id],
    type: [null, 'calendarEvent'],
    redirect_type: [null, 'redirect'],
    targetable_type: [null, 'calendarEvent'],
    targetable_id: [null, String(event)],
    config: [null, {}],
  })
  assert.ok(audit[0]!.request_id !== null && audit.every((a) => a.request_id === audit[0]!.request_id))
})

test('a create with a grant to a missing, blacked-out or foreign principal answers 422 on that element and writes nothing', async () => {
  const { tenant, sharer, sharerRole, employee } = await setup()
  const other = await setup()
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const dept = await given.department(db, tenant, [employee.id])
  const blackedOut = await given.user(db, tenant, { blacked_out_at: new Date() })

  const res = await create(sharer.token, {
    type: 'calendarEvent',
    targetable_type: 'calendarEvent',
    targetable_id: event,
    entity_permissions: [
      { permission_entity: 'role', permission_entity_id: sharerRole },
      { permission_entity: 'user', permission_entity_id: 999999999 },
      { permission_entity: 'department', permission_entity_id: dept },
      { permission_entity: 'user', permission_entity_id: blackedOut.id },
      { permission_entity: 'role', permission_entity_id: other.sharerRole },
      { permission_entity: 'user', permission_entity_id: employee.id },
    ],
  })

  assert.equal(res.statusCode, 422, res.body)
  assert.deepEqual(Object.keys(res.json().errors).sort(), [
    'entity_permissions.1.permission_entity_id',
    'entity_permissions.3.permission_entity_id',
    'entity_permissions.4.permission_entity_id',
  ])
  for (const table of ['shared_items', 'entity_permissions', 'domain_events', 'audit_log'] as const) {
    const rows = await db.selectFrom(table).select('tenant_id').where('tenant_id', '=', tenant.id).execute()
    assert.equal(rows.length, 0, `${table} of the tenant`)
  }
})

test('the non-admin list and show apply view grants in SQL', async () => {
  const { tenant, sharer, sharerRole, employee } = await setup()
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const open = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })
  const forEmployee = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })
  await given.grant(db, tenant, { key: 'view', to: ['user', employee.id], on: ['sharedItem', forEmployee] })
  const forSharerRole = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })
  await given.grant(db, tenant, { key: 'view', to: ['role', sharerRole], on: ['sharedItem', forSharerRole] })
  const adminOnly = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })
  await given.grant(db, tenant, { key: 'administrate', to: ['user', sharer.id], on: ['sharedItem', adminOnly] })

  const employeeSees = await ids(employee.token, '/api/shared-items')
  const sharerSees = await ids(sharer.token, '/api/shared-items')
  const limited = await get(employee.token, '/api/shared-items?limit=1&sort=-created_at')
  const hidden = await get(employee.token, `/api/shared-items/${forSharerRole}`)

  assert.deepEqual(employeeSees, [open, forEmployee, adminOnly].sort())
  assert.deepEqual(sharerSees, [open, forSharerRole, adminOnly].sort())
  assert.equal(limited.json().length, 1)
  assert.equal(hidden.statusCode, 404)
  assert.equal((await get(employee.token, `/api/shared-items/${forEmployee}`)).statusCode, 200)
})

test('a page of shared items is what each viewer may see: users, an administrator, another tenant (shaped statements)', async () => {
  const { tenant, sharer, employee } = await setup()
  const other = await setup()
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const open = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })
  const forEmployee = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })
  await given.grant(db, tenant, { key: 'view', to: ['user', employee.id], on: ['sharedItem', forEmployee] })
  const otherEvent = await givenTarget(db, other.tenant, 'calendarEvent')
  const foreign = await given.sharedItem(db, other.tenant, { type: 'calendarEvent', targetable_id: otherEvent })
  const page = async (token: string) => {
    const res = await get(token, '/api/shared-items?limit=50')
    assert.equal(res.statusCode, 200, res.body)
    return res
      .json()
      .map((item: { id: string }) => item.id)
      .sort()
  }

  const pages = [
    await page(employee.token),
    await page(sharer.token),
    await page(tenant.adminToken),
    await page(other.employee.token),
    await page(employee.token),
  ]

  assert.deepEqual(pages, [
    [open, forEmployee].sort(),
    [open],
    [open, forEmployee].sort(),
    [foreign],
    [open, forEmployee].sort(),
  ])
})

test('list filters and relations', async () => {
  const { tenant, sharer } = await setup()
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const post = await givenTarget(db, tenant, 'infoboardPost')
  const a = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event, userId: sharer.id })
  await given.sharedItem(db, tenant, { type: 'infoboardPost', targetable_id: post })

  const byType = await ids(sharer.token, '/api/shared-items?filter[type]=calendarEvent')
  const byTarget = await ids(sharer.token, `/api/shared-items?filter[targetable_id]=${event}`)
  const withUser = (
    await get(
      sharer.token,
      `/api/shared-items/${a}?relations=user|targetable&selects=id,user_id,targetable_type,targetable_id`,
    )
  ).json()
  const badFilter = await get(sharer.token, '/api/shared-items?filter[nope]=1')

  assert.deepEqual(byType, [a])
  assert.deepEqual(byTarget, [a])
  assert.equal(withUser.user.id, sharer.id)
  assert.equal(withUser.targetable.id, event)
  assert.equal(badFilter.statusCode, 422)
})

test('soft delete hides an item from the non-admin list and show, not from administration; restore brings it back', async () => {
  const { tenant, sharer, employee } = await setup()
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const item = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })
  const other = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })

  const deleted = await remove(sharer.token, item)
  const employeeList = await ids(employee.token, '/api/shared-items')
  const employeeShow = await get(employee.token, `/api/shared-items/${item}`)
  const employeeResolve = await get(employee.token, `/api/shared-items/${item}/resolve`)
  const adminList = await ids(sharer.token, ADMIN)
  const adminShow = await get(sharer.token, `${ADMIN}/${item}`)
  const again = await remove(sharer.token, item)
  const restored = await call(app, sharer.token, { method: 'POST', url: `${ADMIN}/${item}/restore` })

  assert.equal(deleted.statusCode, 204)
  assert.deepEqual(employeeList, [other])
  assert.equal(employeeShow.statusCode, 404)
  assert.equal(employeeResolve.statusCode, 404)
  assert.deepEqual(adminList, [item, other].sort())
  assert.equal(adminShow.statusCode, 200)
  assert.notEqual(adminShow.json().deleted_at, null)
  assert.equal(again.statusCode, 204)
  assert.equal(restored.statusCode, 200, restored.body)
  assert.equal(restored.json().deleted_at, null)
  assert.deepEqual(await ids(employee.token, '/api/shared-items'), [item, other].sort())
})

test('administration applies administrate grants; administrateAll sees every item', async () => {
  const { tenant, sharer, employee } = await setup()
  const allRole = await given.role(db, tenant, ['sharedItems.administrateAll'])
  const all = await given.user(db, tenant, { roleId: allRole })
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const unrestricted = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })
  const mine = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })
  await given.grant(db, tenant, { key: 'administrate', to: ['user', sharer.id], on: ['sharedItem', mine] })
  const theirs = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event, deleted: true })
  await given.grant(db, tenant, { key: 'administrate', to: ['user', employee.id], on: ['sharedItem', theirs] })

  const sharerList = await ids(sharer.token, ADMIN)
  const allList = await ids(all.token, ADMIN)
  const sharerShowTheirs = await get(sharer.token, `${ADMIN}/${theirs}`)
  const sharerUpdateTheirs = await update(sharer.token, theirs, { redirect_type: 'none' })
  const allUpdateTheirs = await update(all.token, theirs, { redirect_type: 'none' })

  assert.deepEqual(sharerList, [unrestricted, mine].sort())
  assert.deepEqual(allList, [unrestricted, mine, theirs].sort())
  assert.equal(sharerShowTheirs.statusCode, 404)
  assert.equal(sharerUpdateTheirs.statusCode, 404)
  assert.equal(allUpdateTheirs.statusCode, 200, allUpdateTheirs.body)
})

test("another tenant's item and malformed ids answer 404 everywhere", async () => {
  const { tenant } = await setup()
  const other = await given.tenant(db)
  const event = await givenTarget(db, other, 'calendarEvent')
  const foreign = await given.sharedItem(db, other, { type: 'calendarEvent', targetable_id: event })
  const token = tenant.adminToken

  for (const id of [foreign, 'not-a-uuid', '123']) {
    const results = await Promise.all([
      get(token, `/api/shared-items/${id}`),
      get(token, `/api/shared-items/${id}/resolve`),
      get(token, `/shared/${id}`),
      get(token, `${ADMIN}/${id}`),
      update(token, id, { redirect_type: 'none' }),
      remove(token, id),
      call(app, token, { method: 'POST', url: `${ADMIN}/${id}/restore` }),
    ])
    for (const res of results) assert.equal(res.statusCode, 404, `${id}: ${res.body}`)
  }
  const ownTarget = await givenTarget(db, tenant, 'calendarEvent')
  const retarget = await create(token, {
    type: 'calendarEvent',
    targetable_type: 'calendarEvent',
    targetable_id: event,
  })
  assert.equal(retarget.statusCode, 422, 'a target of another tenant does not exist here')
  assert.ok(ownTarget > 0)
})

test('create, update, delete and restore record domain events in the same transaction', async () => {
  const { tenant, sharer } = await setup()
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const id = (
    await create(sharer.token, { type: 'calendarEvent', targetable_type: 'calendarEvent', targetable_id: event })
  ).json().id
  await update(sharer.token, id, { redirect_type: 'none' })
  await remove(sharer.token, id)
  await update(sharer.token, id, { type: 'form' }) // refused: no event

  const events = await db
    .selectFrom('domain_events')
    .select(['type', 'subject_id', 'actor_id'])
    .where('tenant_id', '=', tenant.id)
    .where('type', 'like', 'sharedItem.%')
    .orderBy('occurred_at')
    .orderBy('id')
    .execute()

  assert.deepEqual(
    events.map((e) => e.type),
    ['sharedItem.created', 'sharedItem.updated', 'sharedItem.deleted'],
  )
  assert.ok(events.every((e) => e.subject_id === id && e.actor_id === sharer.id))
})

test('requests without a bearer token get 401', async () => {
  const { tenant } = await setup()
  const event = await givenTarget(db, tenant, 'calendarEvent')
  const item = await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: event })
  for (const url of ['/api/shared-items', `/api/shared-items/${item}`, `/shared/${item}`, ADMIN]) {
    assert.equal((await app.inject({ method: 'GET', url })).statusCode, 401, url)
  }
})
