import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import net from 'node:net'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../app.js'
import { instrumentJobs, recordDelivery } from './index.js'
import { buildTestApp, testConfig } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const TOKEN = 'metrics-test-token-0123456789'

async function listening(env: Record<string, string>): Promise<{ app: FastifyInstance; base: string }> {
  // no actor cache: closing an app whose cache listener is the last handle never resolves (seen here; not a metrics matter)
  const app = await buildApp({ config: testConfig({ AUTH_CACHE: 'false', ...env }), db: testDb() })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` }
}

/** The value of one sample (`name{labels} value`) in a Prometheus text exposition, 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}{`) && wanted.every((w) => l.slice(0, l.indexOf('}')).includes(w)))
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0
}

test('GET /metrics needs the METRICS_TOKEN bearer and shows the request just made', async () => {
  const { app, base } = await listening({ METRICS_TOKEN: TOKEN })
  try {
    const scrape = async () => {
      const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
      return res.text()
    }
    assert.equal((await fetch(`${base}/metrics`)).status, 401)
    assert.equal((await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status, 401)
    const tenant = await given.tenant(testDb())
    const labels = { route: '/api/users/:id', method: 'GET', status: '200' }
    const before = sample(await scrape(), 'workplace_http_requests_total', labels)
    const res = await fetch(`${base}/api/users/${tenant.adminId}`, {
      headers: { authorization: `Bearer ${tenant.adminToken}` },
    })
    assert.equal(res.status, 200)
    await fetch(`${base}/api/users/not-a-route/at/all`)
    const text = await scrape()
    assert.equal(sample(text, 'workplace_http_requests_total', labels), before + 1, 'counted under its route pattern')
    assert.ok(sample(text, 'workplace_http_request_duration_seconds_count', labels) >= 1)
    assert.ok(
      sample(text, 'workplace_http_requests_total', { route: 'unmatched', status: '404' }) >= 1,
      'raw URLs never become labels',
    )
    assert.ok(!text.includes(`/api/users/${tenant.adminId}`) && !text.includes('not-a-route'), 'no raw URLs in labels')
    assert.match(text, /^workplace_db_pool_connections\{pool="api",state="in_use"\} \d+$/m)
    assert.match(text, /^workplace_db_pool_connections\{pool="api",state="waiting"\} \d+$/m)
    assert.match(text, /^# TYPE workplace_job_queue_depth gauge$/m)
    assert.match(text, /^nodejs_eventloop_lag_seconds \d/m)
    assert.match(text, /^workplace_sse_streams_open 0$/m)
  } finally {
    await app.close()
  }
})

test('open SSE streams are counted while open', async () => {
  const { app, base } = await listening({ METRICS_TOKEN: TOKEN })
  try {
    const tenant = await given.tenant(testDb())
    const abort = new AbortController()
    const stream = await fetch(`${base}/api/notifications/stream`, {
      headers: { authorization: `Bearer ${tenant.adminToken}` },
      signal: abort.signal,
    })
    assert.equal(stream.status, 200)
    const open = async () =>
      sample(
        await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text(),
        'workplace_sse_streams_open',
        {},
      )
    const scraped = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
    assert.match(scraped, /^workplace_sse_streams_open 1$/m)
    abort.abort()
    for (let i = 0; i < 50 && (await open().catch(() => 1)) !== 0; i++) await new Promise((r) => setTimeout(r, 50))
    assert.match(
      await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text(),
      /^workplace_sse_streams_open 0$/m,
    )
  } finally {
    await app.close()
  }
})

test('metrics are off by default, and METRICS_PORT serves them on 127.0.0.1 without a token', async () => {
  const app = await buildTestApp()
  assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404)

  const port = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
  const { app: served, base } = await listening({ METRICS_PORT: String(port) })
  try {
    assert.equal((await fetch(`${base}/metrics`)).status, 404, 'not on the API port without a token')
    const res = await fetch(`http://127.0.0.1:${port}/metrics`)
    assert.equal(res.status, 200)
    assert.match(await res.text(), /^# TYPE workplace_http_requests_total counter$/m)
  } finally {
    await served.close()
  }
  await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`), 'the metrics listener closes with the app')
})

test('job outcomes and delivery outcomes are counted', async () => {
  const { registry } = await import('./index.js')
  const jobs = instrumentJobs({
    'test:ok': async () => undefined,
    'test:broken': async () => {
      throw new Error('boom')
    },
  })
  await jobs['test:ok']()
  await assert.rejects(jobs['test:broken'](), /boom/)
  recordDelivery('push', 'delivered')
  recordDelivery('webhook', 'failed')
  const text = await registry.metrics()
  assert.equal(sample(text, 'workplace_job_runs_total', { task: 'test:ok', outcome: 'success' }), 1)
  assert.equal(sample(text, 'workplace_job_runs_total', { task: 'test:broken', outcome: 'failure' }), 1)
  assert.equal(sample(text, 'workplace_deliveries_total', { channel: 'push', outcome: 'delivered' }), 1)
  assert.equal(sample(text, 'workplace_deliveries_total', { channel: 'webhook', outcome: 'failed' }), 1)
})
