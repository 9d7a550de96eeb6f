import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()

test('a new tenant has the default roles, languages and notification settings', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const roles = (await call(app, tenant.adminToken, { method: 'GET', url: '/api/roles' })).json()
  assert.deepEqual(
    roles.map((r: { name: string }) => r.name),
    ['Administrator', 'Employee'],
  )
  assert.deepEqual(roles[0].permissions, ['*'])
  assert.ok(roles[1].permissions.includes('users.view') && roles[1].permissions.includes('infoboard.view'))
  const languages = (await call(app, tenant.adminToken, { method: 'GET', url: '/api/languages' })).json()
  assert.equal(languages.length, 10)
  assert.deepEqual(
    languages.find((l: { id: string }) => l.id === 'en-US'),
    { id: 'en-US', name: 'English (US)' },
  )
  const settings = await db
    .selectFrom('notification_settings')
    .select(['key', 'sort_number'])
    .where('tenant_id', '=', tenant.id)
    .orderBy('sort_number')
    .execute()
  assert.deepEqual(
    settings.map((s) => s.key),
    ['general', 'infoboard', 'manuals', 'tasks', 'forms', 'calendar'],
  )
})

test('roles: create, update, delete; a role in use cannot be deleted', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const created = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/roles',
    payload: { name: 'Shift lead', permissions: ['users.view', 'forms.manage'] },
  })
  assert.equal(created.statusCode, 201)
  const role = created.json()
  assert.equal(role.active, true)
  assert.match(role.created_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
  const updated = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/roles/${role.id}`,
    payload: { active: false },
  })
  assert.equal(updated.json().active, false)
  assert.equal(updated.json().name, 'Shift lead')

  await given.user(db, tenant, { roleId: role.id })
  const refused = await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/roles/${role.id}` })
  assert.equal(refused.statusCode, 409)
  assert.equal(refused.json().code, 'role_in_use')

  const unused = (
    await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/roles',
      payload: { name: 'Temp', permissions: [] },
    })
  ).json()
  assert.equal(
    (await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/roles/${unused.id}` })).statusCode,
    204,
  )
  assert.equal((await call(app, tenant.adminToken, { method: 'GET', url: `/api/roles/${unused.id}` })).statusCode, 404)
})

test('roles and departments need their permissions', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const nobody = await given.user(db, tenant, { roleId: await given.role(db, tenant, []) })
  const employee = await given.user(db, tenant)
  assert.equal((await call(app, nobody.token, { method: 'GET', url: '/api/roles' })).statusCode, 403)
  assert.equal((await call(app, nobody.token, { method: 'GET', url: '/api/departments' })).statusCode, 403)
  assert.equal((await call(app, employee.token, { method: 'GET', url: '/api/departments' })).statusCode, 200)
  assert.equal(
    (await call(app, employee.token, { method: 'POST', url: '/api/departments', payload: { name: 'x' } })).statusCode,
    403,
  )
  assert.equal((await call(app, nobody.token, { method: 'GET', url: '/api/languages' })).statusCode, 200)
})

test('departments: members are set on create and replaced on update', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const [a, b, c] = [await given.user(db, tenant), await given.user(db, tenant), await given.user(db, tenant)]
  const created = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/departments',
    payload: { name: 'Store', user_ids: [b.id, a.id] },
  })
  assert.equal(created.statusCode, 201)
  const dept = created.json()
  assert.deepEqual(
    dept.user_ids,
    [a.id, b.id].sort((x, y) => x - y),
  )

  const updated = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/departments/${dept.id}`,
    payload: { user_ids: [c.id] },
  })
  assert.deepEqual(updated.json().user_ids, [c.id])
  const renamed = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/departments/${dept.id}`,
    payload: { name: 'Store 2' },
  })
  assert.deepEqual(renamed.json().user_ids, [c.id], 'membership kept when user_ids is not sent')

  const bad = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/departments/${dept.id}`,
    payload: { name: 'Broken', user_ids: [c.id, 999999999] },
  })
  assert.equal(bad.statusCode, 422)
  const after = (await call(app, tenant.adminToken, { method: 'GET', url: `/api/departments/${dept.id}` })).json()
  assert.equal(after.name, 'Store 2', 'a failed update changes nothing')
  assert.deepEqual(after.user_ids, [c.id])

  assert.equal(
    (await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/departments/${dept.id}` })).statusCode,
    204,
  )
  const memberships = await db
    .selectFrom('department_users')
    .select('user_id')
    .where('department_id', '=', dept.id)
    .execute()
  assert.equal(memberships.length, 0)
})
