/**
 * Issue 33, "Authorization holes": each finding of the adversarial review as an HTTP-level test.
 * (Finding 6, the SSRF guard's IPv6 forms, is tested in automations.test.ts and webhooks.test.ts.)
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, call } from './helpers/build-test-app.js'
import { given, TEST_PASSWORD, type GivenTenant } from './helpers/given.js'
import { testDb } from './helpers/test-database.js'
import { fixture, multipart } from './fixtures/users/forms.js'

const db = testDb()
const get = async (token: string, url: string) => call(await buildTestApp(), token, { method: 'GET', url })
const send = async (token: string, method: 'POST' | 'PUT', url: string, payload: Record<string, unknown>) =>
  call(await buildTestApp(), token, { method, url, payload })

/** The problem body with the one name replaced, for comparing "unknown" and "not readable" answers. */
function problemWithout(res: LightMyRequestResponse, name: string) {
  const body = JSON.parse(res.body.split(name).join('<name>'))
  delete body.instance
  return { status: res.statusCode, body }
}

// ---------------------------------------------------------------- 1. fields the caller may not read

test('filter[text] does not search fields the caller may not read (email, staff number)', async () => {
  const tenant = await given.tenant(db)
  const employee = await given.user(db, tenant)
  const secretive = await given.user(db, tenant, { email: 'zq-hidden@example.test', staff_number: 'SN-90210' })
  const detailReader = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, ['users.view', 'users.viewDetails']),
  })
  const ids = async (token: string, text: string) =>
    (await get(token, `/api/users?filter[id]=${secretive.id}&filter[text]=${encodeURIComponent(text)}`))
      .json()
      .map((u: { id: number }) => u.id)

  for (const text of ['zq-hidden', 'SN-90210', 'zq-'])
    assert.deepEqual(await ids(employee.token, text), [], `an employee learns nothing from "${text}"`)
  assert.deepEqual(await ids(employee.token, secretive.username), [secretive.id], 'readable fields are searched')
  assert.deepEqual(await ids(detailReader.token, 'zq-hidden'), [secretive.id], 'users.viewDetails searches email')
  assert.deepEqual(await ids(tenant.adminToken, 'SN-90210'), [secretive.id], 'the administrator searches all')
})

test('selects, filter and sort on an unreadable field answer exactly like an unknown field (422)', async () => {
  const tenant = await given.tenant(db)
  const employee = await given.user(db, tenant)
  for (const [hidden, unknown] of [
    ['selects=email', 'selects=emial'],
    ['filter[email]=a', 'filter[emial]=a'],
    ['sort=email', 'sort=emial'],
    ['filter[staff_number][like]=1', 'filter[staff_nmber][like]=1'],
  ]) {
    const [a, b] = [
      await get(employee.token, `/api/users?${hidden}`),
      await get(employee.token, `/api/users?${unknown}`),
    ]
    assert.equal(a.statusCode, 422, hidden)
    const name = hidden.includes('staff') ? 'staff_number' : 'email'
    const other = unknown.includes('staff') ? 'staff_nmber' : 'emial'
    assert.deepEqual(problemWithout(a, name), problemWithout(b, other), hidden)
  }
  const show = await get(employee.token, `/api/users/${tenant.adminId}?selects=email`)
  const unknownShow = await get(employee.token, `/api/users/${tenant.adminId}?selects=emial`)
  assert.deepEqual(problemWithout(show, 'email'), problemWithout(unknownShow, 'emial'))
})

// ---------------------------------------------------------------- 2. role escalation

async function userManager(tenant: GivenTenant, extra: string[] = []) {
  const permissions = ['users.view', 'users.create', 'users.update', 'users.delete', ...extra]
  return given.user(db, tenant, { roleId: await given.role(db, tenant, permissions) })
}
const newUser = (roleId: number) => ({
  username: `u${Math.random().toString(36).slice(2, 10)}`,
  password: 'long-enough-1',
  first_name: 'New',
  last_name: 'Person',
  role_id: roleId,
})

test('a user manager cannot create, update or restore a user into a role holding more than they hold (403 on role_id)', async () => {
  const tenant = await given.tenant(db)
  const manager = await userManager(tenant, ['users.administrate'])
  const created = await send(manager.token, 'POST', '/api/users', newUser(tenant.adminRoleId))
  assert.equal(created.statusCode, 403, created.body)
  assert.deepEqual(Object.keys(created.json().errors ?? {}), ['role_id'])
  assert.equal(
    (
      await db
        .selectFrom('users')
        .select('id')
        .where('tenant_id', '=', tenant.id)
        .where('role_id', '=', tenant.adminRoleId)
        .execute()
    ).length,
    1,
    'only the tenant administrator holds the role',
  )

  const victim = await given.user(db, tenant)
  const updated = await send(manager.token, 'PUT', `/api/users/${victim.id}`, { role_id: tenant.adminRoleId })
  assert.equal(updated.statusCode, 403, updated.body)
  assert.deepEqual(Object.keys(updated.json().errors ?? {}), ['role_id'])
  const self = await send(manager.token, 'PUT', `/api/users/${manager.id}`, { role_id: tenant.adminRoleId })
  assert.equal(self.statusCode, 403, self.body)

  await db.updateTable('users').set({ deleted_at: new Date().toISOString() }).where('id', '=', victim.id).execute()
  const restored = await send(manager.token, 'POST', `/api/users/restore/${victim.id}`, { role_id: tenant.adminRoleId })
  assert.equal(restored.statusCode, 403, restored.body)
  assert.deepEqual(Object.keys(restored.json().errors ?? {}), ['role_id'])

  // a role within the manager's own permissions stays assignable, and an administrator assigns any
  const lesser = await given.role(db, tenant, ['users.view'])
  assert.equal((await send(manager.token, 'POST', '/api/users', newUser(lesser))).statusCode, 201)
  assert.equal((await send(tenant.adminToken, 'POST', '/api/users', newUser(tenant.adminRoleId))).statusCode, 201)
})

test('the escalation of the review: a created administrator cannot then manage roles', async () => {
  const tenant = await given.tenant(db)
  const manager = await userManager(tenant)
  const body = newUser(tenant.adminRoleId)
  assert.equal((await send(manager.token, 'POST', '/api/users', body)).statusCode, 403)
  const login = await call(await buildTestApp(), undefined, {
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: body.username, password: body.password },
  })
  assert.notEqual(login.statusCode, 200)
})

test('a CSV import naming a role beyond the importer is refused on rows.<line>.role_id (403)', async () => {
  const tenant = await given.tenant(db)
  const importer = await userManager(tenant, ['users.administrate'])
  const csv = `username,first_name,last_name,role_id\nclimber,C,L,${tenant.adminRoleId}\n`
  const form = multipart({}, { user_data_csv: { bytes: Buffer.from(csv), filename: 'u.csv', contentType: 'text/csv' } })
  const res = await call(await buildTestApp(), importer.token, {
    method: 'POST',
    url: '/api/users/csv',
    payload: form.payload,
    headers: form.headers,
  })
  assert.equal(res.statusCode, 403, res.body)
  assert.deepEqual(Object.keys(res.json().errors), ['rows.2.role_id'])
})

test('a user manager cannot change the password, email or username of a user holding permissions they lack', async () => {
  const tenant = await given.tenant(db)
  const manager = await userManager(tenant, ['users.administrate'])
  const peer = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['users.view']) })
  for (const [key, value] of [
    ['password', 'taken-over-123'],
    ['email', 'attacker@example.test'],
    ['username', 'renamed-admin'],
  ] as const) {
    const res = await send(manager.token, 'PUT', `/api/users/${tenant.adminId}`, { [key]: value })
    assert.equal(res.statusCode, 403, `${key}: ${res.body}`)
    assert.deepEqual(Object.keys(res.json().errors ?? {}), [key])
    // a user whose permissions the manager holds stays manageable
    assert.equal(
      (await send(manager.token, 'PUT', `/api/users/${peer.id}`, { [key]: `${value}-peer` })).statusCode,
      200,
    )
  }
  const login = await call(await buildTestApp(), undefined, {
    method: 'POST',
    url: '/api/auth/login',
    payload: {
      tenant: tenant.slug,
      username: (
        await db.selectFrom('users').select('username').where('id', '=', tenant.adminId).executeTakeFirstOrThrow()
      ).username,
      password: TEST_PASSWORD,
    },
  })
  assert.equal(login.statusCode, 200, 'the administrator still logs in with their own password')
})

// ---------------------------------------------------------------- 3. directory trees

test('a restriction on a directory applies to its subdirectories and every file below (lists, shows, bytes, explain)', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const employee = await given.user(db, tenant)
  const mkdir = async (name: string, parent_id: number | null) =>
    (
      await call(app, tenant.adminToken, {
        method: 'POST',
        url: '/api/filemanager/directories',
        payload: { name, parent_id },
      })
    ).json().id as number
  const secret = await mkdir('secret', null)
  const sub = await mkdir('secret-sub', secret)
  const subsub = await mkdir('secret-sub-sub', sub)
  const open = await mkdir('open', null)
  await given.grant(db, tenant, { key: 'view', to: ['user', tenant.adminId], on: ['filemanagerDirectory', secret] })
  const form = multipart(
    { directory_id: String(subsub) },
    { file: { bytes: fixture('pixel.png'), filename: 'x.png', contentType: 'image/png' } },
  )
  const file = (
    await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/filemanager/files',
      payload: form.payload,
      headers: form.headers,
    })
  ).json().id as number

  const listed = (await get(employee.token, '/api/filemanager/directories')).json().map((d: { id: number }) => d.id)
  assert.deepEqual(listed, [open])
  assert.deepEqual((await get(employee.token, '/api/filemanager/files')).json(), [])
  for (const url of [
    `/api/filemanager/directories/${sub}`,
    `/api/filemanager/directories/${subsub}`,
    `/api/filemanager/files/${file}`,
    `/api/filemanager/files/${file}/content`,
    `/api/filemanager/files/${file}/download`,
  ])
    assert.equal((await get(employee.token, url)).statusCode, 404, url)

  const explain = await get(
    tenant.adminToken,
    `/api/administration/access/explain?user_id=${employee.id}&target_entity=filemanagerFile&target_entity_id=${file}&key=view`,
  )
  assert.equal(explain.statusCode, 200, explain.body)
  assert.equal(explain.json().allowed, false)
  assert.match(JSON.stringify(explain.json()), new RegExp(`${secret}`), 'explain names the restricting directory')

  // the administrator and the grantee still see the whole tree
  assert.equal((await get(tenant.adminToken, `/api/filemanager/files/${file}`)).statusCode, 200)
})

// ---------------------------------------------------------------- 4. relations

test('relations=entityPermissions does not list grants to a caller who may not manage grants', async () => {
  const tenant = await given.tenant(db)
  const employee = await given.user(db, tenant)
  const folder = await given.folder(db, tenant, { type: 'form' })
  await given.grant(db, tenant, { key: 'view', to: ['user', tenant.adminId], on: ['folder', folder] })

  const res = await get(employee.token, `/api/users/${tenant.adminId}?relations=entityPermissions`)
  const unknown = await get(employee.token, `/api/users/${tenant.adminId}?relations=entityPermissionz`)

  assert.equal(res.statusCode, 422, res.body)
  assert.doesNotMatch(res.body, new RegExp(String(folder)))
  assert.deepEqual(problemWithout(res, 'entityPermissions'), problemWithout(unknown, 'entityPermissionz'))
  const admin = await get(tenant.adminToken, `/api/users/${tenant.adminId}?relations=entityPermissions`)
  assert.equal(admin.json().entityPermissions.length, 1)
})

// ---------------------------------------------------------------- 5. ids in bodies

test("a department's or role's folder_id must name a visible folder of the caller's tenant and type (422 like a missing one)", async () => {
  const tenant = await given.tenant(db)
  const other = await given.tenant(db)
  const foreignDepartmentFolder = await given.folder(db, other, { type: 'department' })
  const foreignRoleFolder = await given.folder(db, other, { type: 'role' })
  const ownDepartmentFolder = await given.folder(db, tenant, { type: 'department' })
  const ownRoleFolder = await given.folder(db, tenant, { type: 'role' })
  const wrongType = await given.folder(db, tenant, { type: 'form' })
  const manager = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, ['departments.view', 'departments.manage', 'roles.view', 'roles.manage']),
  })
  const hiddenDepartmentFolder = await given.folder(db, tenant, { type: 'department' })
  await given.grant(db, tenant, { key: 'view', to: ['user', tenant.adminId], on: ['folder', hiddenDepartmentFolder] })

  const cases: Array<[string, Record<string, unknown>, number]> = [
    ['/api/departments', { name: 'x' }, foreignDepartmentFolder],
    ['/api/departments', { name: 'x' }, 999_999_999],
    ['/api/departments', { name: 'x' }, wrongType],
    ['/api/departments', { name: 'x' }, hiddenDepartmentFolder],
    ['/api/roles', { name: 'x', permissions: [] }, foreignRoleFolder],
    ['/api/roles', { name: 'x', permissions: [] }, 999_999_998],
    ['/api/roles', { name: 'x', permissions: [] }, ownDepartmentFolder],
  ]
  const answers = []
  for (const [url, body, folderId] of cases) {
    const res = await send(manager.token, 'POST', url, { ...body, folder_id: folderId })
    assert.equal(res.statusCode, 422, `${url} folder ${folderId}: ${res.body}`)
    assert.deepEqual(Object.keys(res.json().errors), ['folder_id'])
    answers.push({ url, detail: problemWithout(res, String(folderId)) })
  }
  assert.equal(
    new Set(answers.filter((a) => a.url === '/api/departments').map((a) => JSON.stringify(a.detail))).size,
    1,
  )

  const department = await send(manager.token, 'POST', '/api/departments', {
    name: 'ok',
    folder_id: ownDepartmentFolder,
  })
  assert.equal(department.statusCode, 201, department.body)
  const role = await send(manager.token, 'POST', '/api/roles', {
    name: 'ok',
    permissions: [],
    folder_id: ownRoleFolder,
  })
  assert.equal(role.statusCode, 201, role.body)
  const moved = await send(manager.token, 'PUT', `/api/departments/${department.json().id}`, {
    folder_id: foreignDepartmentFolder,
  })
  assert.equal(moved.statusCode, 422)
  const movedRole = await send(manager.token, 'PUT', `/api/roles/${role.json().id}`, { folder_id: foreignRoleFolder })
  assert.equal(movedRole.statusCode, 422)
})

// ------------------------------------------------------------- beyond the review: the same principles

test('a role manager cannot give a role permissions they do not hold (403 naming permissions.<i>), on create and update', async () => {
  const tenant = await given.tenant(db)
  const manager = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['roles.view', 'roles.manage']) })

  const created = await send(manager.token, 'POST', '/api/roles', {
    name: 'Too much',
    permissions: ['roles.view', '*'],
  })
  assert.equal(created.statusCode, 403, created.body)
  assert.equal(created.json().code, 'exceeds_own_permissions')
  assert.deepEqual(Object.keys(created.json().errors), ['permissions.1'])
  const users = await send(manager.token, 'POST', '/api/roles', { name: 'Users', permissions: ['users.delete'] })
  assert.equal(users.statusCode, 403, users.body)

  const own = await send(manager.token, 'POST', '/api/roles', { name: 'Viewers', permissions: ['roles.view'] })
  assert.equal(own.statusCode, 201, own.body)
  const raised = await send(manager.token, 'PUT', `/api/roles/${own.json().id}`, { permissions: ['users.create'] })
  assert.equal(raised.statusCode, 403, raised.body)
  assert.deepEqual(Object.keys(raised.json().errors), ['permissions.0'])
  assert.deepEqual((await get(tenant.adminToken, `/api/roles/${own.json().id}`)).json().permissions, ['roles.view'])

  const byAdmin = await send(tenant.adminToken, 'POST', '/api/roles', { name: 'Any', permissions: ['users.delete'] })
  assert.equal(byAdmin.statusCode, 201, byAdmin.body)
})

test("relations=role and relations=departments show a caller without roles.view / departments.view only the related record's id and name", async () => {
  const tenant = await given.tenant(db)
  const roleId = await given.role(db, tenant, ['users.view'])
  const departmentId = await given.department(db, tenant)
  const employee = await given.user(db, tenant, { roleId, departmentIds: [departmentId] })
  const roleReader = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, ['users.view', 'roles.view', 'departments.view']),
  })
  const url = `/api/users/${employee.id}?relations=role,departments`

  const limited = (await get(employee.token, url)).json()
  assert.deepEqual(limited.role, { id: roleId, name: limited.role.name })
  assert.deepEqual(limited.departments, [{ id: departmentId, name: limited.departments[0].name }])
  const full = (await get(roleReader.token, url)).json()
  assert.deepEqual(full.role.permissions, ['users.view'])
  assert.ok('folder_id' in full.departments[0])
})

test('an SSO administrator cannot make provisioned users hold more than they hold (default_role_id, 403)', async () => {
  const tenant = await given.tenant(db)
  const ssoAdmin = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['tenant.administrate']) })
  const powerful = await given.role(db, tenant, ['users.delete', 'roles.manage'])
  const res = await send(ssoAdmin.token, 'PUT', '/api/administration/oidc', {
    issuer: 'https://idp.example.invalid',
    client_id: 'c',
    client_secret: 's',
    provisioning: 'create',
    default_role_id: powerful,
  })
  assert.equal(res.statusCode, 403, res.body)
  assert.equal(res.json().code, 'exceeds_own_permissions')
  assert.deepEqual(Object.keys(res.json().errors), ['default_role_id'])
})
