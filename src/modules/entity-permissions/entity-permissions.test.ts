import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()
const app = await buildTestApp()

const create = (token: string, payload: object) =>
  call(app, token, { method: 'POST', url: '/api/entity-permissions', payload })
const get = (token: string, url: string) => call(app, token, { method: 'GET', url })
const remove = (token: string, id: number) =>
  call(app, token, { method: 'DELETE', url: `/api/entity-permissions/${id}` })

async function grantRows(tenantId: number) {
  return db
    .selectFrom('entity_permissions')
    .select(['id', 'key', 'permission_entity', 'permission_entity_id', 'target_entity', 'target_entity_id'])
    .where('tenant_id', '=', tenantId)
    .orderBy('id')
    .execute()
}

test('create answers 201 with the record, and 200 with the same record when it exists', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const folder = await given.folder(db, tenant)
  const body = {
    permission_entity: 'user',
    permission_entity_id: user.id,
    target_entity: 'folder',
    target_entity_id: folder,
  }

  const first = await create(tenant.adminToken, body)
  const again = await create(tenant.adminToken, { ...body, key: 'view', target_entity_id: String(folder) })

  assert.equal(first.statusCode, 201, first.body)
  const record = first.json()
  assert.equal(record.key, 'view', 'key defaults to view')
  assert.equal(record.target_entity_id, folder, 'integer targets answer an integer id')
  assert.deepEqual(Object.keys(record).sort(), [
    'created_at',
    'id',
    'key',
    'permission_entity',
    'permission_entity_id',
    'target_entity',
    'target_entity_id',
    'updated_at',
  ])
  assert.equal(again.statusCode, 200)
  assert.deepEqual(again.json(), record)
  assert.equal((await grantRows(tenant.id)).length, 1)
  const events = await db
    .selectFrom('domain_events')
    .select(['type', 'subject_id'])
    .where('tenant_id', '=', tenant.id)
    .where('type', 'like', 'entityPermission.%')
    .execute()
  assert.deepEqual(events, [{ type: 'entityPermission.created', subject_id: String(record.id) }])
})

test('50 concurrent identical creates leave exactly one record', async () => {
  const tenant = await given.tenant(db)
  const role = await given.role(db, tenant, [])
  const folder = await given.folder(db, tenant)
  const body = {
    key: 'write',
    permission_entity: 'role',
    permission_entity_id: role,
    target_entity: 'folder',
    target_entity_id: folder,
  }

  const responses = await Promise.all(Array.from({ length: 50 }, () => create(tenant.adminToken, body)))

  const statuses = responses.map((r) => r.statusCode)
  assert.equal(statuses.filter((s) => s === 201).length, 1, JSON.stringify(statuses))
  assert.equal(statuses.filter((s) => s === 200).length, 49)
  assert.equal(new Set(responses.map((r) => r.json().id)).size, 1)
  assert.equal((await grantRows(tenant.id)).length, 1)
})

test('lists the grants of one target, shows one, deletes one (204)', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const folder = await given.folder(db, tenant)
  const otherFolder = await given.folder(db, tenant)
  const a = await given.grant(db, tenant, { key: 'view', to: ['user', user.id], on: ['folder', folder] })
  const b = await given.grant(db, tenant, { key: 'write', to: ['role', tenant.employeeRoleId], on: ['folder', folder] })
  await given.grant(db, tenant, { key: 'view', to: ['user', user.id], on: ['folder', otherFolder] })

  const list = await get(tenant.adminToken, `/api/entity-permissions/folder/${folder}`)
  const one = await get(tenant.adminToken, `/api/entity-permissions/${a}?selects=id,key,target_entity_id`)
  const deleted = await remove(tenant.adminToken, a)

  assert.equal(list.statusCode, 200)
  assert.deepEqual(
    list.json().map((g: { id: number }) => g.id),
    [a, b],
  )
  assert.deepEqual(one.json(), { id: a, key: 'view', target_entity_id: folder })
  assert.equal(deleted.statusCode, 204)
  assert.equal(deleted.body, '')
  assert.equal((await get(tenant.adminToken, `/api/entity-permissions/${a}`)).statusCode, 404)
  assert.equal((await remove(tenant.adminToken, a)).statusCode, 404)
  const events = await db
    .selectFrom('domain_events')
    .select('subject_id')
    .where('tenant_id', '=', tenant.id)
    .where('type', '=', 'entityPermission.deleted')
    .execute()
  assert.deepEqual(events, [{ subject_id: String(a) }])
  assert.equal(
    (await get(tenant.adminToken, `/api/entity-permissions/folder/${folder}/extra`)).statusCode,
    404,
    'exactly two segments',
  )
})

test('relations permissionEntity and targetEntity carry the basic fields', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const department = await given.department(db, tenant, [], 'Kitchen')
  const folder = await given.folder(db, tenant, { name: 'Recipes' })
  await given.grant(db, tenant, { key: 'view', to: ['user', user.id], on: ['folder', folder] })
  await given.grant(db, tenant, { key: 'write', to: ['department', department], on: ['folder', folder] })

  const res = await get(
    tenant.adminToken,
    `/api/entity-permissions/folder/${folder}?relations=permissionEntity|targetEntity`,
  )

  const [toUser, toDepartment] = res.json()
  assert.equal(toUser.permissionEntity.id, user.id)
  assert.equal(toUser.permissionEntity.username, user.username)
  assert.equal(toUser.permissionEntity.password_hash, undefined)
  assert.equal(toDepartment.permissionEntity.name, 'Kitchen')
  assert.equal(toUser.targetEntity.id, folder)
  assert.equal(toUser.targetEntity.name, 'Recipes')
  assert.equal(
    (await get(tenant.adminToken, `/api/entity-permissions/folder/${folder}?relations=nope`)).statusCode,
    422,
  )
})

test('create rejects bad references and unsupported targets with 422 naming the field', async () => {
  const tenant = await given.tenant(db)
  const other = await given.tenant(db)
  const user = await given.user(db, tenant)
  const foreignUser = await given.user(db, other)
  const formFolder = await given.folder(db, tenant, { type: 'form' })
  const channel = await given.folder(db, tenant, { type: 'infoboardChannel' })
  const foreignFolder = await given.folder(db, other)
  const valid = {
    permission_entity: 'user',
    permission_entity_id: user.id,
    target_entity: 'folder',
    target_entity_id: formFolder,
  }
  const cases: Array<[object, string]> = [
    [{ target_entity: 'nonsense' }, 'target_entity'],
    [{ target_entity: 'user', target_entity_id: user.id }, 'target_entity'],
    [{ target_entity: 'role', target_entity_id: tenant.employeeRoleId }, 'target_entity'],
    [{ target_entity: 'department' }, 'target_entity'],
    [{ target_entity: 'notification' }, 'target_entity'],
    [{ target_entity: 'sharedItem', target_entity_id: '7c1c2b1e-3a7e-4f4e-9a55-0b1f4a7f1b2c' }, 'target_entity_id'],
    [{ target_entity: 'calendarEvent' }, 'target_entity_id'], // a registered content target: that id is no calendar event
    [{ key: 'comment' }, 'key'],
    [{ key: 'viewFormMessages', target_entity_id: channel }, 'key'],
    [{ key: 'nonsense' }, 'key'],
    [{ target_entity_id: 999999999 }, 'target_entity_id'],
    [{ target_entity_id: foreignFolder }, 'target_entity_id'],
    [{ target_entity_id: 'abc' }, 'target_entity_id'],
    [{ permission_entity_id: 999999999 }, 'permission_entity_id'],
    [{ permission_entity_id: foreignUser.id }, 'permission_entity_id'],
    [{ permission_entity: 'role', permission_entity_id: user.id }, 'permission_entity_id'],
    [{ permission_entity: 'group' }, 'permission_entity'],
    [{ permission_entity_id: undefined }, 'permission_entity_id'],
    [{ target_entity: undefined }, 'target_entity'],
    [{ surprise: 1 }, 'surprise'],
  ]
  for (const [change, field] of cases) {
    const res = await create(tenant.adminToken, { ...valid, ...change })
    assert.equal(res.statusCode, 422, `${JSON.stringify(change)} → ${res.body}`)
    assert.ok(
      res.json().errors?.[field],
      `${JSON.stringify(change)}: expected "${field}" in ${JSON.stringify(res.json().errors)}`,
    )
  }
  assert.equal((await grantRows(tenant.id)).length, 0)
  assert.equal(
    (await create(tenant.adminToken, { ...valid, key: 'comment', target_entity_id: channel })).statusCode,
    201,
    'channels take comment',
  )
})

test('managing grants needs entityPermissions.manage or administrate access on the target', async () => {
  const tenant = await given.tenant(db)
  const employee = await given.user(db, tenant)
  const formsManager = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, ['forms.view', 'forms.manage']),
  })
  const grantManager = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, ['entityPermissions.manage']),
  })
  const open = await given.folder(db, tenant)
  const guarded = await given.folder(db, tenant)
  const survey = await given.folder(db, tenant, { type: 'survey' })
  await given.grant(db, tenant, { key: 'administrate', to: ['user', employee.id], on: ['folder', guarded] })
  const existing = await given.grant(db, tenant, { key: 'view', to: ['user', employee.id], on: ['folder', open] })
  const body = (folder: number) => ({
    key: 'write',
    permission_entity: 'user',
    permission_entity_id: employee.id,
    target_entity: 'folder',
    target_entity_id: folder,
  })

  assert.equal((await create(employee.token, body(open))).statusCode, 403, 'no manage permission')
  assert.equal(
    (await create(employee.token, { ...body(open), key: 'view' })).statusCode,
    403,
    'repeating an existing grant reveals nothing either',
  )
  assert.equal((await get(employee.token, `/api/entity-permissions/folder/${open}`)).statusCode, 403)
  assert.equal((await get(employee.token, `/api/entity-permissions/${existing}`)).statusCode, 403)
  assert.equal((await remove(employee.token, existing)).statusCode, 403)
  // a survey folder is invisible to a forms manager (no surveys.view): it answers like a folder that does not exist
  const invisible = await create(formsManager.token, body(survey))
  const absent = await create(formsManager.token, body(999_999_999))
  assert.equal(invisible.statusCode, 422, 'the existence rule: an invisible target is "not found"')
  assert.equal(invisible.body.replaceAll(String(survey), '<id>'), absent.body.replaceAll('999999999', '<id>'))
  assert.deepEqual(invisible.json().errors.target_entity_id, [`no folder with id ${survey} exists`])
  await given.grant(db, tenant, { key: 'write', to: ['user', employee.id], on: ['folder', survey] })
  const repeatedInvisible = await create(formsManager.token, body(survey))
  assert.equal(
    repeatedInvisible.body.replaceAll(String(survey), '<id>'),
    absent.body.replaceAll('999999999', '<id>'),
    'an existing grant on an invisible target is not revealed',
  )
  assert.equal(
    (await create(formsManager.token, body(guarded))).statusCode,
    403,
    'administrate grants exclude the manager',
  )
  assert.equal((await create(formsManager.token, body(open))).statusCode, 201)
  assert.equal((await get(formsManager.token, `/api/entity-permissions/${existing}`)).statusCode, 200)
  assert.equal(
    (await create(grantManager.token, body(guarded))).statusCode,
    201,
    'entityPermissions.manage manages any target',
  )
  assert.equal((await remove(formsManager.token, existing)).statusCode, 204)
})

test("another tenant's grant or target is not found", async () => {
  const tenant = await given.tenant(db)
  const other = await given.tenant(db)
  const foreignFolder = await given.folder(db, other)
  const foreignGrant = await given.grant(db, other, {
    key: 'view',
    to: ['role', other.employeeRoleId],
    on: ['folder', foreignFolder],
  })

  assert.equal((await get(tenant.adminToken, `/api/entity-permissions/${foreignGrant}`)).statusCode, 404)
  assert.equal((await remove(tenant.adminToken, foreignGrant)).statusCode, 404)
  assert.equal((await get(tenant.adminToken, `/api/entity-permissions/folder/${foreignFolder}`)).statusCode, 404)
  assert.equal((await grantRows(other.id)).length, 1)
})

test('an unknown or unsupported alias in the path is a 422 on target_entity', async () => {
  const tenant = await given.tenant(db)

  const unknown = await get(
    tenant.adminToken,
    '/api/entity-permissions/noSuchAlias/7c1c2b1e-3a7e-4f4e-9a55-0b1f4a7f1b2c',
  )
  const user = await get(tenant.adminToken, `/api/entity-permissions/user/${tenant.adminId}`)

  assert.equal(unknown.statusCode, 422)
  assert.ok(unknown.json().errors.target_entity)
  assert.equal(user.statusCode, 422)
})
