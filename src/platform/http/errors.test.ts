import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()

function assertProblem(
  res: { statusCode: number; headers: Record<string, unknown>; json: () => any; body: string },
  status: number,
  code?: string,
) {
  assert.equal(res.statusCode, status, res.body)
  assert.equal(res.headers['content-type'], 'application/problem+json')
  const body = res.json()
  assert.equal(body.type, 'about:blank')
  assert.equal(body.status, status)
  assert.equal(typeof body.title, 'string')
  assert.equal(typeof body.detail, 'string')
  assert.match(body.code, /^[a-z][a-z0-9_]*$/)
  if (code) assert.equal(body.code, code)
  assert.doesNotMatch(res.body, /at .*\.(ts|js):\d+|node_modules|select .* from/i, 'no stack traces or SQL')
  return body
}

test('problem+json for 400, 401, 403, 404, 413, 415 and 422', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const employee = await given.user(db, tenant)
  const json = { 'content-type': 'application/json' }

  assertProblem(
    await call(app, tenant.adminToken, { method: 'POST', url: '/api/roles', headers: json, payload: '{"name": ' }),
    400,
    'malformed_body',
  )
  assertProblem(await app.inject({ method: 'GET', url: '/api/roles' }), 401, 'unauthenticated')
  assertProblem(
    await call(app, employee.token, { method: 'POST', url: '/api/roles', payload: { name: 'x', permissions: [] } }),
    403,
    'forbidden',
  )
  assertProblem(await call(app, tenant.adminToken, { method: 'GET', url: '/api/nowhere' }), 404, 'not_found')
  assertProblem(await app.inject({ method: 'GET', url: '/api/nowhere' }), 404, 'not_found')
  assertProblem(await call(app, tenant.adminToken, { method: 'GET', url: '/api/roles/999999999' }), 404, 'not_found')
  assertProblem(await call(app, tenant.adminToken, { method: 'GET', url: '/api/roles/not-a-number' }), 404, 'not_found')
  const big = JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024), permissions: [] })
  const tooLarge = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/roles',
    headers: json,
    payload: big,
  })
  assertProblem(tooLarge, 413, 'payload_too_large')
  assert.equal(tooLarge.headers.connection, 'close', 'the rest of a too-large body is not read')
  assertProblem(
    await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/roles',
      headers: { 'content-type': 'text/xml' },
      payload: '<role/>',
    }),
    415,
    'unsupported_media_type',
  )
  const invalid = assertProblem(
    await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/roles',
      payload: { permissions: ['nope.perm'], extra: 1 },
    }),
    422,
    'validation_failed',
  )
  assert.ok(invalid.errors.name, 'missing field named')
  assert.ok(invalid.errors.extra, 'unknown body key rejected, not dropped')
})

test('422 names nested field paths', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const wrongType = assertProblem(
    await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/roles',
      payload: { name: 'x', permissions: ['users.view', 5] },
    }),
    422,
  )
  assert.ok(wrongType.errors['permissions.1'], JSON.stringify(wrongType.errors))
  const unknownPermission = assertProblem(
    await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/roles',
      payload: { name: 'x', permissions: ['users.view', 'users.fly'] },
    }),
    422,
  )
  assert.deepEqual(Object.keys(unknownPermission.errors), ['permissions.1'])
})

test('JSON bodies are not type-coerced', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const res = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/roles',
    payload: { name: 'x', permissions: [], active: 'true' },
  })
  assert.ok(assertProblem(res, 422).errors.active)
})

test('every response carries nosniff and no X-Powered-By', async () => {
  const app = await buildTestApp()
  for (const url of ['/health/live', '/api/roles', '/api/nowhere']) {
    const res = await app.inject({ method: 'GET', url })
    assert.equal(res.headers['x-content-type-options'], 'nosniff', url)
    assert.equal(res.headers['x-powered-by'], undefined, url)
  }
})

test('CORS answers only configured origins', async () => {
  const app = await buildTestApp()
  const res = await app.inject({
    method: 'OPTIONS',
    url: '/api/roles',
    headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
  })
  assert.equal(res.headers['access-control-allow-origin'], undefined)
})

// on Citus a unique violation is raised by a shard and names the shard's constraint (seen on a
// coordinator + 2 workers: `users_username_uniq_102087`, `tenants_slug_key_102010`); single-node
// PostgreSQL cannot produce that name, hence the error object here
test('a unique violation is recognised by its constraint, also under a Citus shard name', async () => {
  const { isUniqueViolation } = await import('../db/pg-errors.js')
  assert.equal(isUniqueViolation({ code: '23505', constraint: 'users_username_uniq' }, 'users_username_uniq'), true)
  assert.equal(
    isUniqueViolation({ code: '23505', constraint: 'users_username_uniq_102087' }, 'users_username_uniq'),
    true,
  )
  assert.equal(isUniqueViolation({ code: '23505', constraint: 'tenants_slug_key_102010' }, 'tenants_slug_key'), true)
  assert.equal(isUniqueViolation({ code: '23505', constraint: 'users_username_uniq_x' }, 'users_username_uniq'), false)
  assert.equal(
    isUniqueViolation({ code: '23505', constraint: 'users_email_uniq_102087' }, 'users_username_uniq'),
    false,
  )
  assert.equal(
    isUniqueViolation({ code: '23503', constraint: 'users_username_uniq_102087' }, 'users_username_uniq'),
    false,
  )
  // relayed from a worker, the error has no constraint field: the name is only in the message
  const relayed = (name: string) => ({
    code: '23505',
    message: `duplicate key value violates unique constraint "${name}"`,
  })
  assert.equal(isUniqueViolation(relayed('tenants_slug_key_102010'), 'tenants_slug_key'), true)
  assert.equal(isUniqueViolation(relayed('users_username_uniq_102077'), 'users_username_uniq'), true)
  assert.equal(isUniqueViolation(relayed('users_email_uniq_102077'), 'users_username_uniq'), false)
  assert.equal(isUniqueViolation({ code: '23505', message: 'duplicate key' }, 'users_username_uniq'), false)
})
