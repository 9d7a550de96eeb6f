/**
 * BOLA and BFLA, generated from the registered route table (contract 90): every route must be
 * classified in support/route-classes.ts; every classified route is then swept.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { call } from '../helpers/build-test-app.js'
import { given, type GivenTenant } from '../helpers/given.js'
import { testDb } from '../helpers/test-database.js'
import { changedTables, tenantFingerprint } from './support/fingerprint.js'
import { buildTenantFixtures, leakedIds, tenantIds, type TenantFixtures } from './support/fixtures.js'
import { classify, lackingPermissions, type RouteClass } from './support/route-classes.js'
import { appWithRouteTable, routeKey, type RegisteredRoute } from './support/routes.js'

const db = testDb()
let app: FastifyInstance
let routes: RegisteredRoute[]
let a: TenantFixtures
let b: GivenTenant

before(async () => {
  ;({ app, routes } = await appWithRouteTable())
  a = await buildTenantFixtures(db)
  b = await given.tenant(db)
  // tenant B owns one row of each kind too, so B's lists are not trivially empty
  await buildTenantFixtures(db)
})
after(() => app.close())

function request(route: RegisteredRoute, spec: RouteClass, token: string) {
  const url = spec.path(a)
  const body = spec.body?.(a)
  return url === undefined
    ? undefined
    : call(app, token, { method: route.method as never, url, payload: body?.payload as never, headers: body?.headers })
}

const swept = () =>
  routes
    .map((route) => ({ route, spec: classify(route.method, route.url) }))
    .filter(
      (r): r is { route: RegisteredRoute; spec: RouteClass } =>
        r.spec !== undefined && r.spec.kind !== 'public' && !r.spec.skip,
    )

test('every registered route is classified for the BOLA/BFLA sweep', () => {
  const unclassified = routes.filter((route) => !classify(route.method, route.url)).map(routeKey)
  assert.deepEqual(
    unclassified,
    [],
    `classify these routes in test/reliability/support/route-classes.ts: ${unclassified.join(', ')}`,
  )
  console.log(`# route table: ${routes.length} routes, ${swept().length} swept`)
})

test("tenant B's administrator gets 404 for tenant A's IDs, sees none of A's rows and changes nothing of A", async (t) => {
  const idsOfA = await tenantIds(db, a.tenant.id)
  for (const { route, spec } of swept()) {
    await t.test(routeKey(route), async () => {
      const beforeA = await tenantFingerprint(db, a.tenant.id)
      const res = await request(route, spec, b.adminToken)
      assert.ok(res, `no fixture of tenant A for ${routeKey(route)}: add one in support/fixtures.ts`)
      assert.ok(res.statusCode < 500, `${res.statusCode} ${res.body.slice(0, 300)}`)
      const allowed = spec.lenient ? [404, 422] : [404]
      if (spec.kind === 'id')
        assert.ok(
          allowed.includes(res.statusCode),
          `expected 404 for another tenant's ID, got ${res.statusCode} ${res.body.slice(0, 300)}`,
        )
      if (res.headers['content-type']?.toString().includes('json')) {
        const leaks = leakedIds(res.json(), idsOfA)
        assert.deepEqual(leaks, [], `response contains IDs of tenant A: ${leaks.join(', ')}`)
      }
      const changed = changedTables(beforeA, await tenantFingerprint(db, a.tenant.id))
      assert.deepEqual(changed, [], `tenant A's rows changed in: ${changed.join(', ')}`)
    })
  }
})

test('a user whose role lacks the route permission gets 403/404 and changes nothing', async (t) => {
  const guarded = swept().filter(({ spec }) => spec.permission)
  const probes = new Map<string, string>()
  for (const { spec } of guarded) {
    const permissions = lackingPermissions(spec)
    const key = permissions.join(',')
    if (probes.has(key)) continue
    const roleId = await given.role(db, a.tenant, permissions)
    probes.set(key, (await given.user(db, a.tenant, { roleId })).token)
  }
  const visibleIds = new Set(
    [a.folderId, a.roleId, a.departmentId, a.victim.id, a.automationId].filter(Boolean).map(String),
  )
  for (const { route, spec } of guarded) {
    await t.test(`${routeKey(route)} without ${spec.permission}`, async () => {
      const token = probes.get(lackingPermissions(spec).join(','))!
      const beforeA = await tenantFingerprint(db, a.tenant.id)
      const res = await request(route, spec, token)
      assert.ok(res, `no fixture for ${routeKey(route)}`)
      if (spec.hides) {
        assert.ok([200, 403, 404].includes(res.statusCode), `${res.statusCode} ${res.body.slice(0, 300)}`)
        if (res.statusCode === 200)
          assert.deepEqual(
            leakedIds(res.json(), new Set([a.folderId, ...Object.values(a.content)].filter(Boolean).map(String))),
            [],
          )
      } else {
        const refused = spec.lenient ? [403, 404, 422] : [403, 404]
        assert.ok(refused.includes(res.statusCode), `expected 403/404, got ${res.statusCode} ${res.body.slice(0, 300)}`)
        assert.equal(res.headers['content-type'], 'application/problem+json')
      }
      void visibleIds
      const changed = changedTables(beforeA, await tenantFingerprint(db, a.tenant.id))
      assert.deepEqual(changed, [], `rows changed in: ${changed.join(', ')}`)
    })
  }
})
