/**
 * Abuse limits and response headers (contract 90): login brute force, oversized uploads and CSVs,
 * absurd paging values, flooded query strings, nosniff / X-Powered-By / CORS.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import v8 from 'node:v8'
import vm from 'node:vm'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { call } from '../helpers/build-test-app.js'
import { given, type GivenTenant } from '../helpers/given.js'
import { testDb } from '../helpers/test-database.js'
import { appWithRouteTable, openApiHas } from './support/routes.js'

const db = testDb()
let app: FastifyInstance
let tenant: GivenTenant

before(async () => {
  ;({ app } = await appWithRouteTable())
  tenant = await given.tenant(db)
})
after(() => app.close())

test('the 11th failed login for one username within the window gets 429 with Retry-After', async () => {
  const user = await given.user(db, tenant)
  const statuses: number[] = []
  let last
  for (let i = 0; i < 11; i++) {
    last = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { tenant: tenant.slug, username: user.username, password: `wrong-${i}` },
    })
    statuses.push(last.statusCode)
  }
  assert.deepEqual(statuses.slice(0, 10), Array(10).fill(401))
  assert.equal(statuses[10], 429)
  assert.ok(Number(last!.headers['retry-after']) > 0)
  assert.equal(last!.headers['content-type'], 'application/problem+json')
})

/** Streams `bytes` of multipart upload to a listening copy of the app without holding them in memory. */
async function streamUpload(url: string, token: string, field: string, fileName: string, bytes: number) {
  const boundary = 'reliability-boundary'
  const head = Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="${field}"; filename="${fileName}"\r\ncontent-type: application/octet-stream\r\n\r\n`,
  )
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  const chunk = Buffer.alloc(64 * 1024, 0x61)
  return new Promise<{ status: number; type: string | undefined; sent: number }>((resolve, reject) => {
    let sent = 0
    const req = http.request(
      url,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': head.length + bytes + tail.length,
        },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], sent }))
      },
    )
    req.on('error', (error) => (sent > 0 ? undefined : reject(error)))
    req.write(head)
    const pump = () => {
      while (sent < bytes) {
        const piece = bytes - sent >= chunk.length ? chunk : chunk.subarray(0, bytes - sent)
        sent += piece.length
        if (!req.write(piece)) return void req.once('drain', pump)
      }
      req.end(tail)
    }
    pump()
  })
}

test('a 50 MiB upload is refused with 413 without being buffered in memory', async (t) => {
  if (!(await openApiHas(app, 'POST', '/api/users'))) return t.skip('POST /api/users does not exist yet')
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  if (!doc.paths['/api/users'].post.requestBody?.content?.['multipart/form-data'])
    return t.skip('POST /api/users takes no multipart upload yet')
  const server = await app.listen({ port: 0, host: '127.0.0.1' })
  void server
  const port = (app.server.address() as AddressInfo).port
  // live JS heap + Buffers after a forced GC: a buffered 50 MiB body would show here, garbage does not
  v8.setFlagsFromString('--expose-gc')
  const gc = vm.runInNewContext('gc') as () => void
  const used = () => {
    gc()
    const m = process.memoryUsage()
    return m.heapUsed + m.arrayBuffers
  }
  const rssBefore = used()
  let peak = rssBefore
  const sampler = setInterval(() => {
    peak = Math.max(peak, used())
  }, 50)
  const result = await streamUpload(
    `http://127.0.0.1:${port}/api/users`,
    tenant.adminToken,
    'profile_picture',
    'huge.png',
    50 * 1024 * 1024,
  )
  clearInterval(sampler)
  assert.equal(result.status, 413)
  assert.equal(result.type, 'application/problem+json')
  const growthMiB = (peak - rssBefore) / 1024 / 1024
  console.log(
    `# 50 MiB upload: 413 after ${(result.sent / 1024 / 1024).toFixed(1)} MiB sent, peak heap+buffer growth ${growthMiB.toFixed(1)} MiB`,
  )
  assert.ok(growthMiB < 25, `heap+buffers grew by ${growthMiB.toFixed(1)} MiB during a 50 MiB upload`)
})

test('a CSV of 100,000 rows is refused with 422 (row limit) and inserts nothing', async (t) => {
  if (!(await openApiHas(app, 'POST', '/api/users/csv'))) return t.skip('POST /api/users/csv does not exist yet')
  const rows = ['username,password,first_name,last_name']
  for (let i = 0; i < 100_000; i++) rows.push(`u${i},pw${i}pw${i},F,L`)
  const csv = Buffer.from(rows.join('\n'))
  const boundary = 'csv-boundary'
  const payload = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="user_data_csv"; filename="users.csv"\r\ncontent-type: text/csv\r\n\r\n`,
    ),
    csv,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ])
  const usersBefore = await db
    .selectFrom('users')
    .select(db.fn.countAll().as('n'))
    .where('tenant_id', '=', tenant.id)
    .executeTakeFirstOrThrow()
  const heapBefore = process.memoryUsage().heapUsed
  const res = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users/csv',
    payload,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  })
  const heapGrowthMiB = (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024
  console.log(
    `# CSV of 100,000 rows (${(csv.length / 1024 / 1024).toFixed(1)} MiB): ${res.statusCode}, heap growth ${heapGrowthMiB.toFixed(1)} MiB`,
  )
  assert.ok([413, 422].includes(res.statusCode), `${res.statusCode} ${res.body.slice(0, 300)}`)
  assert.equal(res.headers['content-type'], 'application/problem+json')
  const usersAfter = await db
    .selectFrom('users')
    .select(db.fn.countAll().as('n'))
    .where('tenant_id', '=', tenant.id)
    .executeTakeFirstOrThrow()
  assert.equal(Number(usersAfter.n), Number(usersBefore.n))
})

test('limit=1e12 and negative offsets are refused with 422', async () => {
  for (const query of ['limit=1e12', 'limit=1000000000000', 'offset=-1', 'limit=-5', 'offset=1e12', 'limit=abc']) {
    const res = await call(app, tenant.adminToken, { method: 'GET', url: `/api/roles?${query}` })
    assert.equal(res.statusCode, 422, `${query}: ${res.statusCode} ${res.body.slice(0, 200)}`)
    assert.equal(res.headers['content-type'], 'application/problem+json')
  }
})

test('a query string with 10,000 keys is refused with 400/422 quickly', async () => {
  const query = Array.from({ length: 10_000 }, (_, i) => `filter[k${i}]=${i}`).join('&')
  const started = performance.now()
  const res = await call(app, tenant.adminToken, { method: 'GET', url: `/api/roles?${query}` })
  const ms = performance.now() - started
  assert.ok([400, 422].includes(res.statusCode), `${res.statusCode}`)
  assert.equal(res.headers['content-type'], 'application/problem+json')
  assert.ok(ms < 1000, `took ${ms.toFixed(0)} ms`)
  const flat = Array.from({ length: 10_000 }, (_, i) => `k${i}=${i}`).join('&')
  const flatRes = await call(app, undefined, { method: 'GET', url: `/health/live?${flat}` })
  assert.ok([400, 422].includes(flatRes.statusCode), `${flatRes.statusCode}`)
})

test('every response carries X-Content-Type-Options: nosniff and no X-Powered-By', async () => {
  const probes = [
    await app.inject({ method: 'GET', url: '/health/live' }),
    await app.inject({ method: 'GET', url: '/api/openapi.json' }),
    await app.inject({ method: 'GET', url: '/docs' }),
    await app.inject({ method: 'GET', url: '/api/roles' }),
    await app.inject({ method: 'GET', url: '/no/such/route' }),
    await call(app, tenant.adminToken, { method: 'GET', url: '/api/roles' }),
    await call(app, tenant.adminToken, { method: 'GET', url: '/api/roles?limit=x' }),
    await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/roles',
      payload: '{bad json',
      headers: { 'content-type': 'application/json' },
    }),
    await app.inject({
      method: 'OPTIONS',
      url: '/api/roles',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
    }),
  ]
  for (const res of probes) {
    assert.equal(res.headers['x-content-type-options'], 'nosniff', `${res.statusCode} ${res.raw.req?.url ?? ''}`)
    assert.equal(res.headers['x-powered-by'], undefined)
  }
})

test('CORS answers only the configured origins', async () => {
  const { app: corsApp } = await appWithRouteTable({ CORS_ORIGINS: 'https://app.example' })
  try {
    const preflight = (origin: string) =>
      corsApp.inject({
        method: 'OPTIONS',
        url: '/api/roles',
        headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
      })
    const allowed = await preflight('https://app.example')
    assert.equal(allowed.headers['access-control-allow-origin'], 'https://app.example')
    const refused = await preflight('https://evil.example')
    assert.equal(refused.headers['access-control-allow-origin'], undefined)
    const simple = await corsApp.inject({
      method: 'GET',
      url: '/health/live',
      headers: { origin: 'https://evil.example' },
    })
    assert.equal(simple.headers['access-control-allow-origin'], undefined)
  } finally {
    await corsApp.close()
  }
  const noOrigins = await app.inject({ method: 'GET', url: '/health/live', headers: { origin: 'https://app.example' } })
  assert.equal(noOrigins.headers['access-control-allow-origin'], undefined, 'no CORS_ORIGINS: no CORS at all')
  assert.notEqual(noOrigins.headers['access-control-allow-origin'], '*')
})
