import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()

test('an undeclared query key is a 422 naming it and listing the allowed keys; ?username=anna never lists every user', async () => {
  const tenant = await given.tenant(db)
  await given.user(db, tenant, { username: 'anna' })
  await given.user(db, tenant, { username: 'bert' })
  const app = await buildTestApp()
  const cases: Array<[string, string]> = [
    ['/api/users?username=anna', 'username'],
    ['/api/users?foo=bar', 'foo'],
    ['/api/users?limt=5', 'limt'],
    ['/api/users/current?limit=1', 'limit'],
    ['/api/roles?filter[name]=x&extra=1', 'extra'],
    ['/api/notifications/count?limit=3', 'limit'],
  ]
  for (const [url, key] of cases) {
    const res = await call(app, tenant.adminToken, { method: 'GET', url })
    assert.equal(res.statusCode, 422, `${url}: ${res.body}`)
    assert.equal(res.headers['content-type'], 'application/problem+json')
    const body = res.json()
    assert.equal(body.code, 'validation_failed')
    assert.deepEqual(Object.keys(body.errors), [key], url)
    assert.match(body.errors[key][0], url.includes('/count') ? /allowed: filter\)/ : /allowed: .*selects/, url)
    assert.match(body.detail, new RegExp(`"${key}"`))
  }
})

test('a route without query parameters refuses any, and the documented keys and aliases still work', async () => {
  const tenant = await given.tenant(db)
  const anna = await given.user(db, tenant, { username: 'anna' })
  await given.user(db, tenant, { username: 'bert' })
  const app = await buildTestApp()
  const none = await call(app, tenant.adminToken, { method: 'POST', url: '/api/auth/logout?x=1' })
  assert.equal(none.statusCode, 422, none.body)
  assert.match(none.json().errors.x[0], /takes no query parameters/)

  const filtered = await call(app, tenant.adminToken, {
    method: 'GET',
    url: '/api/users?filter[username]=anna&select=id&include=role&sort=-id&limit=5&offset=0',
  })
  assert.equal(filtered.statusCode, 200, filtered.body)
  assert.deepEqual(
    filtered.json().map((u: { id: number }) => u.id),
    [anna.id],
  )
})

test('OpenAPI declares filter as a deepObject with the filterable fields of each list', async () => {
  const app = await buildTestApp()
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const filter = doc.paths['/api/users'].get.parameters.find((p: { name: string }) => p.name === 'filter')
  assert.equal(filter.style, 'deepObject')
  assert.equal(filter.explode, true)
  assert.ok(filter.schema.properties.username, 'users can be filtered by username')
  assert.ok(filter.schema.properties.text, 'the named filter text is documented')
  const rolesFilter = doc.paths['/api/roles'].get.parameters.find((p: { name: string }) => p.name === 'filter')
  assert.ok(rolesFilter.schema.properties.name && !rolesFilter.schema.properties.username)
})
