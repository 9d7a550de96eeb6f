import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()

/** A tenant with known roles: the two defaults plus alpha, beta (inactive), gamma (folder 7). */
async function fixture() {
  const tenant = await given.tenant(db)
  const alpha = await given.role(db, tenant, ['users.view'], { name: 'alpha' })
  const beta = await given.role(db, tenant, [], { name: 'Beta_%', active: false })
  const gamma = await given.role(db, tenant, [], { name: 'gamma' })
  await db.updateTable('roles').set({ folder_id: 7 }).where('id', '=', gamma).execute()
  const get = async (query: string) =>
    call(await buildTestApp(), tenant.adminToken, { method: 'GET', url: `/api/roles?${query}` })
  const ids = async (query: string) => {
    const res = await get(query)
    assert.equal(res.statusCode, 200, res.body)
    return res.json().map((r: { id: number }) => r.id)
  }
  return { tenant, alpha, beta, gamma, admin: tenant.adminRoleId, employee: tenant.employeeRoleId, get, ids }
}

test('filter operators select the right rows in SQL', async () => {
  const f = await fixture()
  const cases: Array<[string, number[]]> = [
    ['filter[name]=alpha', [f.alpha]],
    ['filter[name][eq]=alpha', [f.alpha]],
    ['filter[name][is]=alpha', [f.alpha]],
    ['filter[active]=false', [f.beta]],
    ['filter[active]=0', [f.beta]],
    ['filter[active][ne]=true', [f.beta]],
    ['filter[active][is_not]=1', [f.beta]],
    [`filter[id][in]=${f.alpha},${f.gamma}`, [f.alpha, f.gamma]],
    [`filter[id][nin]=${f.alpha},${f.gamma}`, [f.admin, f.employee, f.beta]],
    [`filter[id][not_in]=${f.admin}`, [f.employee, f.alpha, f.beta, f.gamma]],
    [`filter[id][gt]=${f.alpha}`, [f.beta, f.gamma]],
    [`filter[id][gte]=${f.alpha}`, [f.alpha, f.beta, f.gamma]],
    [`filter[id][lt]=${f.alpha}`, [f.admin, f.employee]],
    [`filter[id][lte]=${f.alpha}`, [f.admin, f.employee, f.alpha]],
    ['filter[name][like]=AMM', [f.gamma]],
    ['filter[name][value]=amm', [f.gamma]],
    ['filter[name][like]=_%', [f.beta]], // like metacharacters are literal
    ['filter[folder_id]=null', [f.admin, f.employee, f.alpha, f.beta]],
    ['filter[folder_id][null]=false', [f.gamma]],
    ['filter[folder_id][null]=true&filter[active]=true', [f.admin, f.employee, f.alpha]],
    ['filter[folder_id][ne]=7', [f.admin, f.employee, f.alpha, f.beta]],
    [`filter[id][gte]=${f.alpha}&filter[id][lt]=${f.gamma}`, [f.alpha, f.beta]],
    ['filter[created_at][gte]=2000-01-01', [f.admin, f.employee, f.alpha, f.beta, f.gamma]],
    ['filter[created_at][lt]=2000-01-01T00:00:00Z', []],
  ]
  for (const [query, expected] of cases) assert.deepEqual(await f.ids(query), expected, query)
})

test('sort, limit and offset', async () => {
  const f = await fixture()
  assert.deepEqual(await f.ids('sort=-id'), [f.gamma, f.beta, f.alpha, f.employee, f.admin])
  assert.deepEqual(await f.ids('sort=active,-name&limit=3'), [f.beta, f.gamma, f.alpha]) // C collation: lower case sorts after upper
  assert.deepEqual(await f.ids('limit=2&offset=1'), [f.employee, f.alpha])
  assert.deepEqual(await f.ids('limit=0'), [])
  assert.deepEqual(await f.ids('offset=4'), [f.gamma])
})

test('selects returns only the named fields; select is an alias', async () => {
  const f = await fixture()
  const res = await f.get(`selects=id,name&filter[id]=${f.alpha}`)
  assert.deepEqual(res.json(), [{ id: f.alpha, name: 'alpha' }])
  const alias = await f.get(`select=name&filter[id]=${f.alpha}`)
  assert.deepEqual(alias.json(), [{ name: 'alpha' }])
})

test('relations load nested objects; include is an alias', async () => {
  const f = await fixture()
  const dept = await given.department(db, f.tenant, [f.tenant.adminId], 'HQ')
  const app = await buildTestApp()
  const res = await call(app, f.tenant.adminToken, {
    method: 'GET',
    url: '/api/users/current?relations=role|departments|language&selects=id',
  })
  assert.equal(res.statusCode, 200, res.body)
  const body = res.json()
  assert.deepEqual(Object.keys(body).sort(), ['departments', 'id', 'language', 'role'])
  assert.equal(body.role.id, f.admin)
  assert.deepEqual(
    body.departments.map((d: { id: number }) => d.id),
    [dept],
  )
  assert.deepEqual(body.language, { id: 'en-US', name: 'English (US)' })
  const alias = await call(app, f.tenant.adminToken, {
    method: 'GET',
    url: '/api/users/current?include=role&select=id',
  })
  assert.deepEqual(Object.keys(alias.json()).sort(), ['id', 'role'])
})

test('unknown or malformed query keys answer 422 naming the key', async () => {
  const f = await fixture()
  const cases: Array<[string, string]> = [
    ['selects=id,nope', 'selects'],
    ['select=nope', 'select'],
    ['relations=nope', 'relations'],
    ['sort=nope', 'sort'],
    ['sort=permissions', 'sort'],
    ['filter[nope]=1', 'filter.nope'],
    ['filter[id][near]=1', 'filter.id.near'],
    ['filter[id]=abc', 'filter.id'],
    ['filter[id][in]=1,x', 'filter.id.in'],
    ['filter[active]=maybe', 'filter.active'],
    ['filter[folder_id][null]=perhaps', 'filter.folder_id.null'],
    ['filter[created_at][gt]=yesterday', 'filter.created_at.gt'],
    ['filter=plain', 'filter'],
    ['limit=-1', 'limit'],
    ['limit=abc', 'limit'],
    ['offset=-5', 'offset'],
    ['limit=1e12', 'limit'],
    ['selects=__proto__', 'selects'],
    ['selects=constructor', 'selects'],
    ['relations=toString', 'relations'],
    ['sort=constructor', 'sort'],
    ['filter[hasOwnProperty]=1', 'filter.hasOwnProperty'],
    ['filter[id][in][]=&filter[id]=1e12', 'filter.id'],
  ]
  for (const [query, field] of cases) {
    const res = await f.get(query)
    assert.equal(res.statusCode, 422, `${query}: ${res.body}`)
    assert.equal(res.headers['content-type'], 'application/problem+json')
    assert.ok(res.json().errors[field], `${query} names ${field}: ${res.body}`)
  }
})

test('a list without limit streams every row as one valid JSON array', async () => {
  const f = await fixture()
  const tenantId = f.tenant.id
  await db
    .insertInto('roles')
    .values(Array.from({ length: 2500 }, (_, i) => ({ tenant_id: tenantId, name: `bulk-${i}`, permissions: [] })))
    .execute()

  const res = await f.get('selects=id,name&filter[name][like]=bulk-')

  assert.equal(res.statusCode, 200)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const rows = res.json()
  assert.equal(rows.length, 2500)
  assert.deepEqual(rows[0], { id: rows[0].id, name: 'bulk-0' })
  assert.ok(
    rows.every((r: { id: number }, i: number) => i === 0 || r.id > rows[i - 1].id),
    'ordered by id',
  )
  // around the first batch (1,000 rows: answered as a plain array, else streamed): same JSON either way
  for (const [like, count] of [
    ['bulk-1', 1111],
    ['bulk-2', 611],
    ['bulk-none', 0],
  ] as const) {
    const page = await f.get(`selects=id,name&filter[name][like]=${like}`)
    assert.equal(page.statusCode, 200, page.body)
    assert.equal(page.json().length, count, like)
    assert.equal(new Set(page.json().map((r: { id: number }) => r.id)).size, count, `${like}: no row twice`)
  }
})

test('bracketed query keys nest, and a query string with too many keys is refused', async () => {
  const f = await fixture()
  const nested = await f.get('filter[folder_id][null]=false')
  assert.deepEqual(
    nested.json().map((r: { id: number }) => r.id),
    [f.gamma],
  )
  const flood = Array.from({ length: 10_000 }, (_, i) => `k${i}=1`).join('&')
  const res = await f.get(flood)
  assert.equal(res.statusCode, 400)
  assert.equal(res.headers['content-type'], 'application/problem+json')
})

test('a query repeated by callers who may see different fields answers each with their own fields; a refused query stays refused', async () => {
  const tenant = await given.tenant(db)
  const viewer = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['users.view']) })
  const colleague = await given.user(db, tenant, { email: 'colleague@example.com' })
  const app = await buildTestApp()
  const show = (token: string, query = '') =>
    call(app, token, { method: 'GET', url: `/api/users/${colleague.id}${query}` })
  // the same request in turn: the parse remembered for one caller must not answer the other
  for (let round = 0; round < 2; round++) {
    const full = await show(tenant.adminToken)
    assert.equal(full.statusCode, 200, full.body)
    assert.equal(full.json().email, 'colleague@example.com', 'the admin sees the extended fields')
    const basic = await show(viewer.token)
    assert.equal(basic.statusCode, 200, basic.body)
    assert.ok(!('email' in basic.json()), 'a viewer without users.viewDetails does not')
  }
  for (let round = 0; round < 2; round++) {
    const refused = await show(viewer.token, '?selects=id,email')
    assert.equal(refused.statusCode, 422, refused.body)
    assert.match(refused.body, /email/)
    const allowed = await show(tenant.adminToken, '?selects=id,email')
    assert.deepEqual(allowed.json(), { id: colleague.id, email: 'colleague@example.com' })
  }
})
