import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { parseCrontab } from 'graphile-worker'
import { sql } from 'kysely'
import pg from 'pg'
import pino from 'pino'
import { buildApp } from '../../app.js'
import { loadConfig } from '../../config.js'
import { createWorkplaceClient } from '../../../clients/typescript/index.js'
import { registry } from '../../platform/metrics/index.js'
import { sweepRateLimitCounters } from '../../platform/limits/rate-limiter.js'
import { limitsModule, RATE_LIMIT_SWEEP_JOB } from './index.js'
import { selectTenantIds } from '../tenants/index.js'
import { collectJobs } from '../../runtime.js'
import { bearer, instrumentTestApp, testConfig } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { inRequest } from '../../../test/helpers/routable-statements.js'
import { testDatabaseUrl, testDb } from '../../../test/helpers/test-database.js'
import { freshWindow } from '../../../test/helpers/rate-limit-window.js'

const OPERATOR = 'operator-test-token-0123456789'
const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '../../..')

/** An app (a "node") on the shared test database with these limits; no actor cache (nothing to close). */
async function node(env: Record<string, string>): Promise<FastifyInstance> {
  const app = await buildApp({ config: testConfig({ AUTH_CACHE: 'false', ...env }), db: testDb() })
  return instrumentTestApp(app)
}

const current = (app: FastifyInstance, token: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url: '/api/users/current', headers: { ...bearer(token), ...headers } })

/** A counter's value for these labels (0 when the series does not exist yet). */
async function counterValue(name: string, labels: Record<string, string>): Promise<number> {
  const values = (await registry.getSingleMetric(name)?.get())?.values ?? []
  return values.find((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value))?.value ?? 0
}

const limitedSample = (tenantId: number, bucket: string, limit: string) =>
  counterValue('workplace_rate_limited_requests_total', { tenant: String(tenantId), bucket, limit })

/** The address of a node listening on a free port of 127.0.0.1. */
const addressOf = (app: FastifyInstance) => `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`

test('every authenticated answer carries RateLimit-Policy and RateLimit (the draft syntax); public ones none', async () => {
  const app = await node({})
  try {
    const tenant = await given.tenant(testDb())
    const res = await current(app, tenant.adminToken)
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['ratelimit-policy'], '"token-read";q=1200;w=60, "tenant-read";q=12000;w=60')
    assert.match(String(res.headers.ratelimit), /^"token-read";r=(\d+);t=(\d+), "tenant-read";r=(\d+);t=(\d+)$/)
    const [, tokenLeft, reset] = /r=(\d+);t=(\d+)/.exec(String(res.headers.ratelimit))!.map(Number)
    assert.ok(tokenLeft! <= 1199 && tokenLeft! >= 1100, `remaining ${tokenLeft}`)
    assert.ok(reset! >= 1 && reset! <= 60)
    // a write draws on the write bucket; a refused request (404) still carries the headers
    const write = await app.inject({
      method: 'PUT',
      url: '/api/users/999999999',
      headers: bearer(tenant.adminToken),
      payload: {},
    })
    assert.match(String(write.headers['ratelimit-policy']), /^"token-write";q=300;w=60, "tenant-write";q=3000;w=60$/)
    const csv = await app.inject({
      method: 'GET',
      url: '/api/administration/audit-log',
      headers: { ...bearer(tenant.adminToken), accept: 'text/csv' },
    })
    assert.match(String(csv.headers['ratelimit-policy']), /^"token-expensive";q=20;w=60/, 'an export is expensive')
    const live = await app.inject({ method: 'GET', url: '/health/live' })
    assert.equal(live.headers['ratelimit-policy'], undefined)
  } finally {
    await app.close()
  }
})

test('per token: the limit+1st read is a 429 problem with Retry-After; other tokens, writes and tenants go on', async () => {
  await freshWindow(15)
  const app = await node({ RATE_LIMIT_TOKEN_READ: '5' })
  try {
    const tenant = await given.tenant(testDb())
    const other = await given.user(testDb(), tenant)
    const before = await limitedSample(tenant.id, 'read', 'token')
    for (let i = 0; i < 5; i++) assert.equal((await current(app, tenant.adminToken)).statusCode, 200, `request ${i}`)
    const refused = await current(app, tenant.adminToken)
    assert.equal(refused.statusCode, 429)
    assert.equal(refused.headers['content-type'], 'application/problem+json')
    const problem = refused.json()
    assert.equal(problem.code, 'rate_limited')
    assert.equal(problem.status, 429)
    assert.equal(problem.limit, 'token-read')
    const retryAfter = Number(refused.headers['retry-after'])
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${refused.headers['retry-after']}`)
    assert.equal(problem.retry_after, retryAfter)
    assert.match(String(refused.headers.ratelimit), /^"token-read";r=0;t=\d+/)
    assert.equal(await limitedSample(tenant.id, 'read', 'token'), before + 1, 'counted in the metric')
    // another token of the tenant, and a write of the same token, have their own budgets
    assert.equal((await current(app, other.token)).statusCode, 200)
    const write = await app.inject({
      method: 'PUT',
      url: '/api/users/999999999',
      headers: bearer(tenant.adminToken),
      payload: {},
    })
    assert.notEqual(write.statusCode, 429)
  } finally {
    await app.close()
  }
})

test('per tenant: all its tokens together; another tenant is not affected', async () => {
  await freshWindow(15)
  const app = await node({ RATE_LIMIT_TENANT_READ: '8' })
  try {
    const tenant = await given.tenant(testDb())
    const users = [await given.user(testDb(), tenant), await given.user(testDb(), tenant)]
    const statuses: number[] = []
    for (let i = 0; i < 10; i++) statuses.push((await current(app, users[i % 2]!.token)).statusCode)
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 200, 200, 429, 429])
    const refused = await current(app, tenant.adminToken)
    assert.equal(refused.json().limit, 'tenant-read')
    const stranger = await given.tenant(testDb())
    assert.equal((await current(app, stranger.adminToken)).statusCode, 200)
  } finally {
    await app.close()
  }
})

test('the limit holds for the sum of the nodes (two apps on one database, requests alternating)', async () => {
  await freshWindow(15)
  const env = { RATE_LIMIT_TOKEN_READ: '100' }
  const nodes = [await node(env), await node(env), await node(env)]
  try {
    const tenant = await given.tenant(testDb())
    let admitted = 0
    for (let i = 0; i < 300; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, (_, j) => current(nodes[(i + j) % 3]!, tenant.adminToken)),
      )
      admitted += batch.filter((r) => r.statusCode === 200).length
      assert.ok(batch.every((r) => r.statusCode === 200 || r.statusCode === 429))
    }
    assert.ok(admitted <= 100, `admitted ${admitted} of a limit of 100 across 3 nodes`)
    assert.ok(admitted >= 90, `admitted ${admitted}: leased and unspent chunks cost at most 10 %`)
  } finally {
    await Promise.all(nodes.map((n) => n.close()))
  }
})

test('operator route: only OPERATOR_TOKEN raises a tenant limit, at once on the node; exempt lifts every limit', async () => {
  await freshWindow(15)
  const without = await node({})
  const app = await node({ RATE_LIMIT_TOKEN_READ: '3', OPERATOR_TOKEN: OPERATOR })
  try {
    const tenant = await given.tenant(testDb())
    const url = `/api/operator/tenants/${tenant.slug}/limits`
    assert.equal((await without.inject({ method: 'GET', url, headers: bearer(OPERATOR) })).statusCode, 404)
    // the tenant's own administrator cannot raise its limits
    const byAdmin = await app.inject({ method: 'PUT', url, headers: bearer(tenant.adminToken), payload: {} })
    assert.equal(byAdmin.statusCode, 401)
    for (let i = 0; i < 3; i++) assert.equal((await current(app, tenant.adminToken)).statusCode, 200)
    assert.equal((await current(app, tenant.adminToken)).statusCode, 429)
    const invalid = await app.inject({
      method: 'PUT',
      url,
      headers: bearer(OPERATOR),
      payload: { token: { read: -1 } },
    })
    assert.equal(invalid.statusCode, 422)
    assert.ok(invalid.json().errors['token.read'], JSON.stringify(invalid.json()))
    const unknown = await app.inject({
      method: 'PUT',
      url: '/api/operator/tenants/no-such-tenant/limits',
      headers: bearer(OPERATOR),
      payload: {},
    })
    assert.equal(unknown.statusCode, 404)
    const raised = await app.inject({ method: 'PUT', url, headers: bearer(OPERATOR), payload: { token: { read: 10 } } })
    assert.equal(raised.statusCode, 200)
    assert.deepEqual(raised.json().token, { read: 10, write: 300, expensive: 20 })
    const after = await current(app, tenant.adminToken)
    assert.equal(after.statusCode, 200, 'the raise applies at once on the node that made it')
    assert.match(String(after.headers['ratelimit-policy']), /^"token-read";q=10;w=60/)
    const exempt = await app.inject({ method: 'PUT', url, headers: bearer(OPERATOR), payload: { exempt: true } })
    assert.equal(exempt.json().exempt, true)
    assert.deepEqual(exempt.json().token, { read: 3, write: 300, expensive: 20 }, 'PUT replaces the overrides')
    for (let i = 0; i < 20; i++) {
      const res = await current(app, tenant.adminToken)
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['ratelimit-policy'], undefined, 'an exempt tenant draws on no policy')
    }
    const shown = await app.inject({ method: 'GET', url, headers: bearer(OPERATOR) })
    assert.equal(shown.json().exempt, true)
  } finally {
    await Promise.all([without.close(), app.close()])
  }
})

test('in flight per tenant and node: beyond TENANT_MAX_IN_FLIGHT requests wait behind their own tenant; a full line is a 429', async () => {
  const strict = await node({ TENANT_MAX_IN_FLIGHT: '1', TENANT_MAX_QUEUED: '0' })
  const queued = await node({ TENANT_MAX_IN_FLIGHT: '1', TENANT_MAX_QUEUED: '100' })
  try {
    await strict.listen({ port: 0, host: '127.0.0.1' })
    await queued.listen({ port: 0, host: '127.0.0.1' })
    const tenant = await given.tenant(testDb())
    const burst = (app: FastifyInstance) =>
      Promise.all(
        Array.from({ length: 20 }, () =>
          fetch(`${addressOf(app)}/api/users/current`, { headers: bearer(tenant.adminToken) }).then(async (res) => ({
            status: res.status,
            body: await res.text(),
            retryAfter: res.headers.get('retry-after'),
          })),
        ),
      )
    const refused = (await burst(strict)).filter((r) => r.status === 429)
    assert.ok(refused.length > 0, 'with no line to wait in, requests beyond the one in flight are refused')
    assert.equal(JSON.parse(refused[0]!.body).code, 'too_many_concurrent_requests')
    assert.equal(refused[0]!.retryAfter, '1')
    const waited = await burst(queued)
    assert.deepEqual(
      waited.map((r) => r.status),
      Array.from({ length: 20 }, () => 200),
      'in line, every request is served in turn',
    )
  } finally {
    await Promise.all([strict.close(), queued.close()])
  }
})

test('a tenant whose requests wait in line yields its places while another tenant is active on the node; alone, or at a share of 100 %, it never does', async () => {
  const yielding = await node({ TENANT_MAX_IN_FLIGHT: '1', TENANT_MAX_QUEUED: '1000' })
  const never = await node({ TENANT_MAX_IN_FLIGHT: '1', TENANT_MAX_QUEUED: '1000', TENANT_FLOOD_SHARE_PERCENT: '100' })
  const yields = (tenantId: number) =>
    counterValue('workplace_tenant_yielded_admissions_total', { tenant: String(tenantId) })
  try {
    await yielding.listen({ port: 0, host: '127.0.0.1' })
    await never.listen({ port: 0, host: '127.0.0.1' })
    const get = (app: FastifyInstance, token: string) =>
      fetch(`${addressOf(app)}/api/users/current`, { headers: bearer(token) }).then((res) => res.status)
    // enough requests that the tenant's line stays full several times FLOODING_AFTER_MS (60 took 150 ms)
    const FLOOD = 200
    const flood = (app: FastifyInstance, token: string) =>
      Promise.all(Array.from({ length: FLOOD }, () => get(app, token)))
    const sequentially = async (app: FastifyInstance, token: string, n: number) => {
      const statuses: number[] = []
      for (let i = 0; i < n; i++) statuses.push(await get(app, token))
      return statuses
    }
    const alone = await given.tenant(testDb())
    assert.deepEqual(await flood(yielding, alone.adminToken), Array(FLOOD).fill(200))
    assert.equal(await yields(alone.id), 0, 'with no other tenant on the node, its line is served back to back')

    const a = await given.tenant(testDb())
    const b = await given.tenant(testDb())
    assert.equal(await get(yielding, b.adminToken), 200) // B is active on the node
    const [flooded, bStatuses] = await Promise.all([
      flood(yielding, a.adminToken),
      sequentially(yielding, b.adminToken, 20),
    ])
    assert.deepEqual(flooded, Array(FLOOD).fill(200), "A's line is still served, only slower")
    assert.deepEqual(bStatuses, Array(20).fill(200))
    assert.ok((await yields(a.id)) >= 1, `A yielded to B: ${await yields(a.id)} admissions held back`)
    assert.equal(await yields(b.id), 0, 'B, one request at a time, never yields')

    const c = await given.tenant(testDb())
    const d = await given.tenant(testDb())
    assert.equal(await get(never, d.adminToken), 200)
    const [floodedC] = await Promise.all([flood(never, c.adminToken), sequentially(never, d.adminToken, 20)])
    assert.deepEqual(floodedC, Array(FLOOD).fill(200))
    assert.equal(await yields(c.id), 0, 'TENANT_FLOOD_SHARE_PERCENT=100 turns the yield off')
  } finally {
    await Promise.all([yielding.close(), never.close()])
  }
})

test('configuration: TENANT_FLOOD_SHARE_PERCENT from 1 to 100; TENANT_MAX_DB_CONNECTIONS unset follows each tenant, set at least 1', () => {
  assert.equal(loadConfig({}).limits.floodSharePercent, 10)
  assert.equal(loadConfig({}).limits.maxDbConnections, undefined)
  assert.equal(loadConfig({ TENANT_MAX_DB_CONNECTIONS: '3' }).limits.maxDbConnections, 3)
  for (const share of ['0', '101', 'half'])
    assert.throws(() => loadConfig({ TENANT_FLOOD_SHARE_PERCENT: share }), /TENANT_FLOOD_SHARE_PERCENT/)
  assert.throws(() => loadConfig({ TENANT_MAX_DB_CONNECTIONS: '0' }), /TENANT_MAX_DB_CONNECTIONS must be at least 1/)
})

/**
 * A node listening, two tenants, and a user of A locked by the test's own session: every request that
 * updates that user waits on the lock in PostgreSQL, holding its database connection.
 */
async function lockedUserScene(app: FastifyInstance) {
  const locker = new pg.Client({ connectionString: testDatabaseUrl() })
  await locker.connect()
  // another session reads pg_stat_activity: inside the locker's transaction it would read one snapshot
  const observer = new pg.Client({ connectionString: testDatabaseUrl() })
  await observer.connect()
  // the API's sessions running A's update, stopped at its `select … for update` of the user: waiting on
  // the lock (on Citus the coordinator's session waits for the worker that holds the shard's lock),
  // each holding its connection
  const RUNNING_UPDATES = `from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
    and state = 'active' and query ilike 'select % from "users" %for update%'`
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = addressOf(app)
  const a = await given.tenant(testDb())
  const b = await given.tenant(testDb())
  const target = await given.user(testDb(), a)
  const waitingOnLocks = async () =>
    Number((await observer.query<{ n: string }>(`select count(*) as n ${RUNNING_UPDATES}`)).rows[0]!.n)
  return {
    base,
    a,
    b,
    waitingOnLocks,
    /** The sessions waiting on the lock, to name them in a failed assertion. */
    activity: async () =>
      JSON.stringify(
        (await observer.query(`select wait_event_type, wait_event, left(query, 40) as query ${RUNNING_UPDATES}`)).rows,
      ),
    /** Waits (at most 10 s) until at least `count` of A's requests hold a connection waiting on the lock. */
    async untilWaiting(count: number) {
      const deadline = Date.now() + 10_000
      while ((await waitingOnLocks()) < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    },
    lock: async () => {
      await locker.query('begin')
      await locker.query('select id from users where tenant_id = $1 and id = $2 for update', [a.id, target.id])
    },
    unlock: () => locker.query('commit'),
    /** Renames A's locked user (or `userId` with `token`): its status once answered. */
    rename: (name: string, token = a.adminToken, userId = target.id) =>
      fetch(`${base}/api/users/${userId}`, {
        method: 'PUT',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ first_name: name }),
      }).then((res) => res.status),
    async end() {
      await locker.query('rollback').catch(() => undefined)
      await Promise.all([locker.end(), observer.end()])
    },
  }
}

test('database connections per tenant and node: at most TENANT_MAX_DB_CONNECTIONS of one tenant at once; another tenant is not held up', async () => {
  const app = await node({ TENANT_MAX_DB_CONNECTIONS: '2', TENANT_MAX_IN_FLIGHT: '32' })
  try {
    const scene = await lockedUserScene(app)
    try {
      await scene.lock()
      const renames = Array.from({ length: 6 }, (_, i) => scene.rename(`Renamed ${i}`))
      await scene.untilWaiting(2)
      // time for the other four to reach the database, were they not held back
      await new Promise((r) => setTimeout(r, 1_500))
      const waiting = await scene.waitingOnLocks()
      assert.equal(waiting, 2, `two of A's six requests hold a connection, not six: ${await scene.activity()}`)
      // B is not held up by A's requests waiting for connections: it reads and writes at once
      const [current, renamed] = await Promise.all([
        fetch(`${scene.base}/api/users/current`, { headers: bearer(scene.b.adminToken) }).then((res) => res.status),
        scene.rename('Quick', scene.b.adminToken, scene.b.adminId),
      ])
      assert.deepEqual([current, renamed], [200, 200])
      assert.equal(await scene.waitingOnLocks(), 2, "A's four others still wait for a connection of their own tenant")
      await scene.unlock()
      assert.deepEqual(
        await Promise.all(renames),
        [200, 200, 200, 200, 200, 200],
        "then A's requests are served in turn",
      )
    } finally {
      await scene.end()
    }
  } finally {
    await app.close()
  }
})

test("the operator's max_db_connections bounds one tenant's connections; a change reaches its requests in line", async () => {
  // no node-wide connection bound: a tenant's bound is its in-flight bound unless an operator sets one
  const app = await node({ TENANT_MAX_DB_CONNECTIONS: '', TENANT_MAX_IN_FLIGHT: '32', OPERATOR_TOKEN: OPERATOR })
  try {
    const scene = await lockedUserScene(app)
    const url = `/api/operator/tenants/${scene.a.slug}/limits`
    const put = (payload: object) => app.inject({ method: 'PUT', url, headers: bearer(OPERATOR), payload })
    try {
      assert.equal((await app.inject({ method: 'GET', url, headers: bearer(OPERATOR) })).json().max_db_connections, 32)
      for (const invalid of [0, 1.5, 'many']) {
        const refused = await put({ max_db_connections: invalid })
        assert.equal(refused.statusCode, 422, String(invalid))
        assert.ok(refused.json().errors.max_db_connections, JSON.stringify(refused.json()))
      }
      const set = await put({ max_db_connections: 1 })
      assert.equal(set.statusCode, 200)
      assert.equal(set.json().max_db_connections, 1)
      assert.equal(set.json().max_in_flight, 32, 'the in-flight bound is unchanged')
      const usage = await app.inject({
        method: 'GET',
        url: '/api/administration/usage',
        headers: bearer(scene.a.adminToken),
      })
      assert.equal(usage.json().data.rate_limits.max_db_connections, 1, "the tenant's administrators see it")
      await scene.lock()
      const renames = Array.from({ length: 4 }, (_, i) => scene.rename(`Renamed ${i}`))
      await scene.untilWaiting(1)
      await new Promise((r) => setTimeout(r, 1_000))
      assert.equal(await scene.waitingOnLocks(), 1, `one connection, not four: ${await scene.activity()}`)
      // raised while three wait: the tenant's next request brings the new bound, and two of them go on
      assert.equal((await put({ max_db_connections: 3 })).json().max_db_connections, 3)
      const next = fetch(`${scene.base}/api/users/current`, { headers: bearer(scene.a.adminToken) })
      await scene.untilWaiting(3)
      await new Promise((r) => setTimeout(r, 500))
      assert.equal(await scene.waitingOnLocks(), 3, `three connections after the raise: ${await scene.activity()}`)
      await scene.unlock()
      assert.deepEqual(await Promise.all(renames), [200, 200, 200, 200])
      assert.equal((await next).status, 200)
      assert.equal((await put({})).json().max_db_connections, 32, 'without an override it follows max_in_flight')
    } finally {
      await scene.end()
    }
  } finally {
    await app.close()
  }
})

test('the typed client waits Retry-After and retries a 429; with retries: 0 it hands the 429 back', async () => {
  const app = await node({ RATE_LIMIT_TOKEN_READ: '2', RATE_LIMIT_WINDOW_SECONDS: '1' })
  try {
    await app.listen({ port: 0, host: '127.0.0.1' })
    const baseUrl = addressOf(app)
    const tenant = await given.tenant(testDb())
    const statuses: number[] = []
    const counting = async (request: Request) => {
      const response = await fetch(request)
      statuses.push(response.status)
      return response
    }
    const waits: number[] = []
    const api = createWorkplaceClient({
      baseUrl,
      token: tenant.adminToken,
      fetch: counting,
      onRetry: ({ waitSeconds }) => waits.push(waitSeconds),
    })
    // two reads per 1-second window: calls until one was refused (on a slow machine four calls can span two
    // windows without a refusal), each answered 200 to the caller
    for (let i = 0; i < 12 && !statuses.includes(429); i++) {
      const { response, data } = await api.GET('/api/users/current', {})
      assert.equal(response.status, 200, `call ${i} succeeds, retried when refused`)
      assert.ok(data, 'the body of the answer that succeeded')
    }
    assert.ok(statuses.includes(429), `a 429 was seen and retried: ${statuses.join(',')}`)
    assert.equal(statuses.at(-1), 200, `the refused call was retried: ${statuses.join(',')}`)
    assert.ok(waits.length > 0 && waits.every((w) => w === 1), `waited Retry-After (1 s): ${waits.join(',')}`)
    const impatient = createWorkplaceClient({ baseUrl, token: tenant.adminToken, retries: 0 })
    let last = 0
    for (let i = 0; i < 12 && last !== 429; i++) last = (await impatient.GET('/api/users/current', {})).response.status
    assert.equal(last, 429, 'a refusal is handed back, not retried')
  } finally {
    await app.close()
  }
})

test('quotas: GET /api/administration/usage; a create past the users quota is a 403 naming it, nothing written, also when racing', async () => {
  const app = await node({ OPERATOR_TOKEN: OPERATOR })
  try {
    const tenant = await given.tenant(testDb())
    const usage = async () =>
      (await app.inject({ method: 'GET', url: '/api/administration/usage', headers: bearer(tenant.adminToken) })).json()
        .data
    const before = await usage()
    assert.deepEqual(before.quotas.automations, { used: 0, limit: 100 })
    assert.equal(before.quotas.users.limit, 100_000)
    assert.equal(before.rate_limits.token.read, 1200)
    const employee = await given.user(testDb(), tenant)
    const notAdmin = await app.inject({
      method: 'GET',
      url: '/api/administration/usage',
      headers: bearer(employee.token),
    })
    assert.equal(notAdmin.statusCode, 403)

    const used = (await usage()).quotas.users.used as number
    const raised = await app.inject({
      method: 'PUT',
      url: `/api/operator/tenants/${tenant.slug}/limits`,
      headers: bearer(OPERATOR),
      payload: { quotas: { users: used + 2, automations: 0 } },
    })
    assert.equal(raised.statusCode, 200, raised.body)
    assert.deepEqual(raised.json().quotas, {
      users: used + 2,
      automations: 0,
      push_subscriptions: 200_000,
      file_bytes: 50 * 1024 ** 3,
    })
    // five creations race for two places: exactly two are written
    const creations = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        app.inject({
          method: 'POST',
          url: '/api/users',
          headers: bearer(tenant.adminToken),
          payload: {
            username: `quota.${i}`,
            password: 'long-enough-1',
            first_name: 'Q',
            last_name: 'U',
            role_id: tenant.employeeRoleId,
          },
        }),
      ),
    )
    assert.deepEqual(
      creations.map((r) => r.statusCode).sort(),
      [201, 201, 403, 403, 403],
      creations.map((r) => r.body).join('\n'),
    )
    const refused = creations.find((r) => r.statusCode === 403)!.json()
    assert.equal(refused.code, 'quota_exceeded')
    assert.equal(refused.quota, 'users')
    assert.deepEqual(refused.errors, { quota: ['users'] })
    assert.deepEqual((await usage()).quotas.users, { used: used + 2, limit: used + 2 })
    const audited = await testDb()
      .selectFrom('audit_log')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('tenant_id', '=', tenant.id)
      .where('action', '=', 'user.create')
      .executeTakeFirstOrThrow()
    assert.equal(Number(audited.n), 2, 'no audit record of a refused creation')

    const automation = await app.inject({
      method: 'POST',
      url: '/api/administration/automations',
      headers: bearer(tenant.adminToken),
      payload: {
        name: 'Over quota',
        event: 'user.created',
        actions: [
          { type: 'webhook', config: { url: 'https://93.184.216.34/hooks', method: 'POST', headers: {}, auth: null } },
        ],
      },
    })
    assert.equal(automation.statusCode, 403, automation.body)
    assert.equal(automation.json().quota, 'automations')
    assert.equal((await usage()).quotas.automations.used, 0, 'nothing written')
  } finally {
    await app.close()
  }
})

test('CLI: workplace limits set raises a tenant limit and quota, limits show prints them', async () => {
  const tenant = await given.tenant(testDb())
  const cli = async (args: string[]) =>
    (
      await run(process.execPath, [path.join(root, 'bin/workplace.js'), ...args], {
        cwd: root,
        timeout: 30_000,
        env: { ...process.env, DATABASE_URL: testDatabaseUrl(), LOG_LEVEL: 'silent', PORT: '1' },
      })
    ).stdout
  const set = JSON.parse(
    await cli([
      ...[
        'limits',
        'set',
        '--tenant',
        tenant.slug,
        '--token-read',
        '7',
        '--quota-users',
        '9',
        '--max-db-connections',
        '4',
      ],
      ...['--quota-file-bytes', String(5 * 1024 ** 4), '--json'],
    ]),
  )
  assert.deepEqual(set.token, { read: 7, write: 300, expensive: 20 })
  assert.equal(set.quotas.users, 9)
  assert.equal(set.quotas.file_bytes, 5 * 1024 ** 4, 'bytes past int4')
  assert.equal(set.exempt, false)
  assert.equal(set.max_db_connections, 4)
  await assert.rejects(
    cli(['limits', 'set', '--tenant', tenant.slug, '--max-db-connections', '0']),
    /--max-db-connections takes a positive integer/,
  )
  const shown = await cli(['limits', 'show', '--tenant', tenant.slug])
  assert.match(shown, /per token: {2}read 7 {2}write 300/)
  assert.match(shown, /file bytes 5497558138880\n/)
  assert.match(shown, /database connections per node: 4\n/, 'the set before the refused one is kept')
  const app = await node({})
  try {
    const res = await current(app, tenant.adminToken)
    assert.match(String(res.headers['ratelimit-policy']), /^"token-read";q=7;w=60/)
  } finally {
    await app.close()
  }
})

test('the sweep of the counters is an hourly job of the worker (valid graphile-worker crontab)', () => {
  assert.deepEqual(
    parseCrontab(limitsModule.cron!.join('\n')).map((item) => item.task),
    [RATE_LIMIT_SWEEP_JOB],
  )
  assert.match(limitsModule.cron![0]!, /^\d+ \* \* \* \* /, 'every hour')
  const { handlers } = collectJobs({ db: testDb(), config: testConfig(), log: pino({ level: 'silent' }) })
  assert.equal(typeof handlers[RATE_LIMIT_SWEEP_JOB], 'function')
})

test('the hourly sweep deletes the counters of windows that ended over an hour ago, tenant by tenant', async () => {
  const tenants = [await given.tenant(testDb()), await given.tenant(testDb())]
  const now = Date.now()
  const minutesAgo = [0, 30, 59, 61, 62, 90, 120]
  for (const tenant of tenants)
    for (const ago of minutesAgo)
      await sql`insert into rate_limit_counters (tenant_id, key, window_start, used, granted, quota)
        values (${tenant.id}, 'tenant:read', ${new Date(now - ago * 60_000)}, 1, 1, 10)`.execute(testDb())
  // in a request's scope: its statements are checked like a request's (each routed to one tenant; on
  // Citus under the guard that fails a statement sent to more than one shard)
  const deleted = await inRequest(async () =>
    sweepRateLimitCounters(testDb(), await selectTenantIds(testDb()), { now, batch: 2 }),
  )
  assert.ok(deleted >= 8, `deleted ${deleted}`)
  for (const tenant of tenants) {
    const { rows } = await sql<{ window_start: string }>`
      select window_start from rate_limit_counters where tenant_id = ${tenant.id} order by window_start desc`.execute(
      testDb(),
    )
    assert.equal(rows.length, 3, 'the windows of the last hour stay')
  }
})
