import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import path from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDatabaseUrl, testDb } from '../../../test/helpers/test-database.js'
import {
  assertScimError,
  ENTERPRISE,
  GROUP_SCHEMA,
  newUser,
  PATCH_OP,
  scim,
  scimToken,
  USER_SCHEMA,
} from '../../../test/helpers/scim-support.js'

const db = testDb()

test('SCIM tokens: shown once, stored hashed, listed without secret, revocable; 403 without the permissions', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const { id, token } = await scimToken(app, tenant)
  assert.match(token, /^wpscim_\d+_[A-Za-z0-9_-]{43}$/)
  const stored = await db
    .selectFrom('scim_tokens')
    .selectAll()
    .where('tenant_id', '=', tenant.id)
    .executeTakeFirstOrThrow()
  assert.ok(!stored.token_hash.toString('latin1').includes(token) && stored.token_hash.length === 32)
  assert.equal(stored.default_role_id, tenant.employeeRoleId)
  const list = await call(app, tenant.adminToken, { method: 'GET', url: '/api/administration/scim-tokens' })
  assert.equal(list.statusCode, 200)
  assert.deepEqual(Object.keys(list.json()[0]).sort(), [
    'created_at',
    'created_by',
    'default_role_id',
    'id',
    'name',
    'revoked_at',
  ])
  assert.ok(!list.body.includes(token.slice(10)))
  assert.equal((await scim(app, token, 'GET', '/Users')).statusCode, 200)

  const employee = await given.user(db, tenant)
  const refused = await call(app, employee.token, {
    method: 'POST',
    url: '/api/administration/scim-tokens',
    payload: { name: 'x' },
  })
  assert.equal(refused.statusCode, 403)
  assert.equal(
    (await call(app, employee.token, { method: 'DELETE', url: `/api/administration/scim-tokens/${id}` })).statusCode,
    403,
  )

  const revoked = await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/administration/scim-tokens/${id}` })
  assert.equal(revoked.statusCode, 204)
  assertScimError(await scim(app, token, 'GET', '/Users'), 401)
  const audit = await db
    .selectFrom('audit_log')
    .select('action')
    .where('tenant_id', '=', tenant.id)
    .where('target_type', '=', 'scim_token')
    .orderBy('id')
    .execute()
  assert.deepEqual(
    audit.map((a) => a.action),
    ['scim_token.create', 'scim_token.revoke'],
  )
})

test('token isolation: a SCIM token is refused on /api, an access token on /scim, another tenant’s ids are 404', async () => {
  const app = await buildTestApp()
  const a = await given.tenant(db)
  const b = await given.tenant(db)
  const tokenA = (await scimToken(app, a)).token
  const tokenB = (await scimToken(app, b)).token
  assert.equal((await call(app, tokenA, { method: 'GET', url: '/api/users' })).statusCode, 401)
  assert.equal((await call(app, tokenA, { method: 'GET', url: '/api/users/current' })).statusCode, 401)
  assert.equal(
    (await call(app, tokenA, { method: 'POST', url: '/api/administration/scim-tokens', payload: { name: 'x' } }))
      .statusCode,
    401,
  )
  assertScimError(await scim(app, a.adminToken, 'GET', '/Users'), 401)
  assertScimError(await scim(app, a.adminToken, 'GET', '/ServiceProviderConfig'), 401)
  assertScimError(await scim(app, undefined, 'GET', '/Users'), 401)
  // a token whose tenant part is altered is unknown (the hash covers it)
  assertScimError(await scim(app, tokenA.replace(`wpscim_${a.id}_`, `wpscim_${b.id}_`), 'GET', '/Users'), 401)

  const created = await scim(app, tokenA, 'POST', '/Users', newUser('isolated.anna'))
  assert.equal(created.statusCode, 201, created.body)
  const userId = created.json().id
  const group = (await scim(app, tokenA, 'POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Store A' })).json()
  for (const [method, path, body] of [
    ['GET', `/Users/${userId}`],
    ['PUT', `/Users/${userId}`, newUser('isolated.anna')],
    [
      'PATCH',
      `/Users/${userId}`,
      { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] },
    ],
    ['DELETE', `/Users/${userId}`],
    ['GET', `/Groups/${group.id}`],
    [
      'PATCH',
      `/Groups/${group.id}`,
      { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'x' }] },
    ],
    ['DELETE', `/Groups/${group.id}`],
  ] as const) {
    assertScimError(await scim(app, tokenB, method, path, body), 404)
  }
  const listed = (
    await scim(app, tokenB, 'GET', `/Users?filter=${encodeURIComponent('userName eq "isolated.anna"')}`)
  ).json()
  assert.equal(listed.totalResults, 0)
  // B cannot make A's user a member of its group
  const groupB = (
    await scim(app, tokenB, 'POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Store B' })
  ).json()
  assertScimError(
    await scim(app, tokenB, 'PATCH', `/Groups/${groupB.id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'members', value: [{ value: userId }] }],
    }),
    400,
    'invalidValue',
  )
  const stillA = await db
    .selectFrom('users')
    .select(['active', 'deleted_at'])
    .where('id', '=', Number(userId))
    .executeTakeFirstOrThrow()
  assert.deepEqual(stillA, { active: true, deleted_at: null })
})

test('discovery: ServiceProviderConfig, ResourceTypes and Schemas say what is supported', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const { token } = await scimToken(app, tenant)
  const config = await scim(app, token, 'GET', '/ServiceProviderConfig')
  assert.equal(config.statusCode, 200)
  assert.match(String(config.headers['content-type']), /^application\/scim\+json/)
  const body = config.json()
  assert.deepEqual(body.schemas, ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'])
  assert.equal(body.patch.supported, true)
  assert.equal(body.bulk.supported, false)
  assert.equal(body.filter.supported, true)
  assert.equal(body.etag.supported, true)
  assert.equal(body.authenticationSchemes[0].type, 'oauthbearertoken')
  const types = (await scim(app, token, 'GET', '/ResourceTypes')).json()
  assert.deepEqual(
    types.Resources.map((r: { id: string }) => r.id),
    ['User', 'Group'],
  )
  assert.deepEqual(types.Resources[0].schemaExtensions, [{ schema: ENTERPRISE, required: false }])
  assert.equal((await scim(app, token, 'GET', '/ResourceTypes/User')).json().endpoint, '/Users')
  const schemas = (await scim(app, token, 'GET', '/Schemas')).json()
  assert.deepEqual(
    schemas.Resources.map((s: { id: string }) => s.id),
    [USER_SCHEMA, ENTERPRISE, GROUP_SCHEMA],
  )
  const user = (await scim(app, token, 'GET', `/Schemas/${USER_SCHEMA}`)).json()
  const userName = user.attributes.find((a: { name: string }) => a.name === 'userName')
  assert.equal(userName.uniqueness, 'server')
  assertScimError(await scim(app, token, 'GET', '/Schemas/urn:nothing'), 404)
  assertScimError(await scim(app, token, 'POST', '/Bulk', { schemas: [] }), 404)
})

test('CLI: workplace scim token create --tenant <slug> prints a SCIM token once; it works on /scim/v2', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const root = path.resolve(import.meta.dirname, '../../..')
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      path.join(root, 'bin/workplace.js'),
      'scim',
      'token',
      'create',
      '--tenant',
      tenant.slug,
      '--name',
      'Okta',
      '--json',
    ],
    { cwd: root, timeout: 20_000, env: { ...process.env, DATABASE_URL: testDatabaseUrl(), LOG_LEVEL: 'silent' } },
  )
  const printed = JSON.parse(stdout)
  assert.match(printed.token, /^wpscim_/)
  assert.match(printed.url, /\/scim\/v2$/)
  assert.equal((await scim(app, printed.token, 'GET', '/ServiceProviderConfig')).statusCode, 200)
  const stored = await db
    .selectFrom('scim_tokens')
    .select(['name', 'created_by'])
    .where('id', '=', printed.id)
    .executeTakeFirstOrThrow()
  assert.deepEqual(stored, { name: 'Okta', created_by: null })
})

test('no one grants what they do not hold: the token’s role bounds the SCIM client (issue 33’s rule)', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const managerRole = await given.role(db, tenant, ['users.administrate', 'departments.manage', 'users.view'])
  const manager = await given.user(db, tenant, { roleId: managerRole })
  const refused = await call(app, manager.token, {
    method: 'POST',
    url: '/api/administration/scim-tokens',
    payload: { name: 'x', default_role_id: tenant.adminRoleId },
  })
  assert.equal(refused.statusCode, 403, refused.body)
  assert.equal(refused.json().code, 'exceeds_own_permissions')
  // an Employee-role token may not take over an administrator's account, but manages employees
  const { token } = await scimToken(app, tenant)
  const patch = (id: number | string, value: string) =>
    scim(app, token, 'PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'emails[type eq "work"].value', value }],
    })
  assertScimError(await patch(tenant.adminId, 'attacker@example.com'), 403)
  const employee = await given.user(db, tenant)
  assert.equal((await patch(employee.id, 'new@example.com')).statusCode, 200)
})
