import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, call } from './helpers/build-test-app.js'
import { given } from './helpers/given.js'
import { testDb } from './helpers/test-database.js'

const db = testDb()

test("a tenant's token cannot see, change or delete another tenant's roles and departments", async () => {
  const app = await buildTestApp()
  const acme = await given.tenant(db)
  const globex = await given.tenant(db)
  const acmeRole = await given.role(db, acme, [], { name: 'acme-secret-role' })
  const acmeDept = await given.department(db, acme, [], 'acme-secret-dept')

  for (const [path, id] of [
    ['roles', acmeRole],
    ['departments', acmeDept],
  ] as const) {
    assert.equal((await call(app, globex.adminToken, { method: 'GET', url: `/api/${path}/${id}` })).statusCode, 404)
    assert.equal(
      (await call(app, globex.adminToken, { method: 'PUT', url: `/api/${path}/${id}`, payload: { name: 'hijacked' } }))
        .statusCode,
      404,
    )
    assert.equal((await call(app, globex.adminToken, { method: 'DELETE', url: `/api/${path}/${id}` })).statusCode, 404)
    const list = await call(app, globex.adminToken, { method: 'GET', url: `/api/${path}` })
    assert.equal(list.statusCode, 200)
    assert.ok(!list.body.includes('acme-secret'), `${path} list leaks nothing of the other tenant`)
    assert.ok(!list.json().some((row: { id: number }) => row.id === id))
  }
  const role = await db.selectFrom('roles').select('name').where('id', '=', acmeRole).executeTakeFirstOrThrow()
  const dept = await db.selectFrom('departments').select('name').where('id', '=', acmeDept).executeTakeFirstOrThrow()
  assert.equal(role.name, 'acme-secret-role')
  assert.equal(dept.name, 'acme-secret-dept')
})

test("a department cannot take another tenant's users as members", async () => {
  const app = await buildTestApp()
  const acme = await given.tenant(db)
  const globex = await given.tenant(db)
  const stranger = await given.user(db, acme)
  const res = await call(app, globex.adminToken, {
    method: 'POST',
    url: '/api/departments',
    payload: { name: 'd', user_ids: [stranger.id] },
  })
  assert.equal(res.statusCode, 422)
  assert.ok(res.json().errors.user_ids)
})
