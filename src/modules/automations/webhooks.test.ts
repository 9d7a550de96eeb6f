import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, test } from 'node:test'
import { createLocalJWKSet, calculateJwkThumbprint, jwtVerify, SignJWT, decodeProtectedHeader, type JWK } from 'jose'
import { sql } from 'kysely'
import { Webhook } from 'standardwebhooks'
import { buildApp } from '../../app.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { currentSigningKey, rotateSigningKey } from '../../platform/keys/signing-keys.js'
import { isBlockedAddress } from '../../platform/outbound-http/safe-fetch.js'
import { createWebhookDeliverer, type DeliverWebhookPayload } from './index.js'
import { standardWebhookSignature } from './webhook-auth.js'
import { call, testConfig, testSecrets } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import pino from 'pino'

const db = testDb()
const log = pino({ level: 'silent' })
const privateConfig = testConfig({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' })
const strictConfig = testConfig()
const app = buildApp({ config: privateConfig, db })
const FAST_RETRIES = [20, 20, 20, 20, 20, 20, 20]
const deliverer = createWebhookDeliverer(
  { db, config: privateConfig, log },
  { retryDelaysMs: FAST_RETRIES, timeoutMs: 2_000 },
)
const strictDeliverer = createWebhookDeliverer(
  { db, config: strictConfig, log },
  { retryDelaysMs: FAST_RETRIES, timeoutMs: 2_000 },
)
after(async () => {
  await deliverer.close()
  await strictDeliverer.close()
  await (await app).close()
})

// ---------------------------------------------------------------- helpers

interface Received {
  method: string
  url: string
  headers: http.IncomingHttpHeaders
  body: Buffer
}
type Responder = (req: Received, res: http.ServerResponse) => void

/** A loopback receiver recording every request; queued responders answer first, then `fallback`. */
async function startReceiver(fallback: Responder = (_req, res) => res.writeHead(204).end()) {
  const received: Received[] = []
  const queue: Responder[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const record = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) }
      received.push(record)
      ;(queue.shift() ?? fallback)(record, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    received,
    respond: (...responders: Responder[]) => queue.push(...responders),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

async function createAutomation(tenant: GivenTenant, body: Record<string, unknown>) {
  const res = await call(await app, tenant.adminToken, {
    method: 'POST',
    url: '/api/administration/automations',
    payload: { name: 'hook', event: '*', ...body },
  })
  assert.equal(res.statusCode, 201, res.body)
  return res.json() as { id: number }
}

async function testEvent(tenant: GivenTenant, automationId: number): Promise<number[]> {
  const res = await call(await app, tenant.adminToken, {
    method: 'POST',
    url: `/api/administration/automations/${automationId}/test`,
  })
  assert.equal(res.statusCode, 202, res.body)
  return res.json().delivery_ids
}

/** Pending delivery jobs of these deliveries (run_at due or not). */
async function jobsFor(ids: number[]) {
  const { rows } = await sql<{ payload: DeliverWebhookPayload; due: boolean }>`
    select j.payload, j.run_at <= now() as due from graphile_worker._private_jobs j
    join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'automations:deliver_webhook' and (j.payload->>'deliveryId')::bigint = any(${ids})`.execute(db)
  return rows
}

/** Takes the queued first attempts of these deliveries off the queue (the test then runs them by hand). */
async function claim(ids: number[]): Promise<DeliverWebhookPayload[]> {
  const { rows } = await sql<{ payload: DeliverWebhookPayload }>`
    delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
    where t.id = j.task_id and t.identifier = 'automations:deliver_webhook' and (j.payload->>'deliveryId')::bigint = any(${ids})
    returning j.payload`.execute(db)
  assert.equal(rows.length, ids.length, 'one queued first attempt per delivery')
  return ids.map((id) => rows.find((r) => r.payload.deliveryId === id)!.payload)
}

/** Runs this file's delivery jobs through the handler until none is left (the retry delays are ms here). */
async function drain(ids: number[], runner = deliverer, deadlineMs = 8_000) {
  const outcomes: string[] = []
  const stop = Date.now() + deadlineMs
  while (Date.now() < stop) {
    const { rows } = await sql<{ payload: DeliverWebhookPayload }>`
      delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
      where t.id = j.task_id and t.identifier = 'automations:deliver_webhook'
        and (j.payload->>'deliveryId')::bigint = any(${ids}) and j.run_at <= now() and j.locked_at is null
      returning j.payload`.execute(db)
    for (const row of rows) outcomes.push(await runner.deliver(row.payload))
    if (rows.length === 0) {
      if ((await jobsFor(ids)).length === 0) return outcomes
      await new Promise((r) => setTimeout(r, 10))
    }
  }
  throw new Error('delivery jobs did not finish in time')
}

async function delivery(id: number) {
  return db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
}

const expectedBody = (body: Buffer) => JSON.parse(body.toString('utf8'))

// ---------------------------------------------------------------- what goes out

test('secret auth: POST with the JSON body, the contract headers and a Standard Webhooks signature', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`
  const automation = await createAutomation(tenant, {
    actions: [
      {
        type: 'webhook',
        config: {
          url: `${receiver.url}/hooks?x=1`,
          headers: { 'X-Custom': '{{tenant}} $BASE_URL' },
          auth: { type: 'secret', secret: { secret } },
        },
      },
    ],
  })

  const [id] = await testEvent(tenant, automation.id)
  await drain([id])

  assert.equal(receiver.received.length, 1)
  const req = receiver.received[0]
  assert.equal(req.method, 'POST')
  assert.equal(req.url, '/hooks?x=1')
  assert.equal(req.headers['content-type'], 'application/json')
  assert.match(String(req.headers['user-agent']), /^workplace-api-webhooks\/\d+\.\d+\.\d+$/)
  assert.equal(req.headers['x-custom'], '{{tenant}} $BASE_URL', 'config values are never templated')
  const body = expectedBody(req.body)
  assert.deepEqual(Object.keys(body), ['id', 'type', 'timestamp', 'tenant', 'data'])
  assert.equal(body.type, 'automation.test')
  assert.equal(body.tenant, tenant.slug)
  assert.match(body.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
  assert.equal(req.headers['webhook-id'], body.id)
  assert.ok(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000) < 30)
  const verified = new Webhook(secret).verify(req.body.toString('utf8'), req.headers as Record<string, string>)
  assert.deepEqual(verified, body)
  const tampered = Buffer.from(req.body.toString('utf8').replace('automation.test', 'automation.tesT'))
  assert.throws(() => new Webhook(secret).verify(tampered.toString('utf8'), req.headers as Record<string, string>))
  const row = await delivery(id)
  assert.equal(row.status, 'succeeded')
  assert.equal(row.attempts, 1)
  assert.equal(row.response_status, 204)
  assert.equal(row.event_id, body.id)
})

test('secret auth with a plain secret signs with its UTF-8 bytes', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const secret = 'plain sécret'
  const automation = await createAutomation(tenant, {
    actions: [
      { type: 'webhook', config: { url: receiver.url, headers: {}, auth: { type: 'secret', secret: { secret } } } },
    ],
  })

  await drain(await testEvent(tenant, automation.id))

  const req = receiver.received[0]
  const verifier = new Webhook(new Uint8Array(Buffer.from(secret, 'utf8')), { format: 'raw' })
  assert.doesNotThrow(() => verifier.verify(req.body.toString('utf8'), req.headers as Record<string, string>))
})

test('the signature matches the standardwebhooks library for a fixed id, timestamp and body', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
  const body = Buffer.from('{"test": 2432232314}')
  const expected = new Webhook(secret).sign(
    'msg_p5jXN8AQM9LWM0D4loKWxJek',
    new Date(1614265330 * 1000),
    body.toString(),
  )

  assert.equal(standardWebhookSignature(secret, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, body), expected)
  assert.equal(expected, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=')
})

test('basic auth sends the credentials; the delivery log never holds them', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const automation = await createAutomation(tenant, {
    actions: [
      {
        type: 'webhook',
        config: {
          url: receiver.url,
          method: 'PUT',
          headers: {},
          auth: { type: 'basic', basic: { username: 'hook-user', password: 'p4ss:wörd' } },
        },
      },
    ],
  })

  const [id] = await testEvent(tenant, automation.id)
  await drain([id])

  const req = receiver.received[0]
  assert.equal(req.method, 'PUT')
  assert.equal(req.headers.authorization, `Basic ${Buffer.from('hook-user:p4ss:wörd', 'utf8').toString('base64')}`)
  const log = await call(await app, tenant.adminToken, {
    method: 'GET',
    url: `/api/administration/automations/${automation.id}/deliveries`,
  })
  assert.equal(log.statusCode, 200)
  assert.equal(log.json()[0].id, id)
  assert.ok(!log.body.includes('p4ss') && !log.body.includes('Basic'), log.body)
})

test('header auth sends the named header; GET sends no body', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const automation = await createAutomation(tenant, {
    actions: [
      {
        type: 'webhook',
        config: {
          url: receiver.url,
          method: 'GET',
          headers: { Accept: 'text/plain' },
          auth: { type: 'header', header: { name: 'X-Api-Key', value: 'k-123' } },
        },
      },
    ],
  })

  await drain(await testEvent(tenant, automation.id))

  const req = receiver.received[0]
  assert.equal(req.method, 'GET')
  assert.equal(req.body.length, 0)
  assert.equal(req.headers['content-length'], undefined)
  assert.equal(req.headers['content-type'], undefined)
  assert.equal(req.headers['x-api-key'], 'k-123')
  assert.equal(req.headers.accept, 'text/plain')
  assert.ok(req.headers['webhook-id'])
})

test('jwt auth sends an ES256 token verifiable with the JWKS, bound to the body', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const automation = await createAutomation(tenant, {
    actions: [
      { type: 'webhook', config: { url: `${receiver.url}/jwt?q=1`, method: null, headers: {}, auth: { type: 'jwt' } } },
    ],
  })

  await drain(await testEvent(tenant, automation.id))

  const req = receiver.received[0]
  const token = String(req.headers.authorization).replace(/^Bearer /, '')
  const jwksRes = await (await app).inject({ method: 'GET', url: '/.well-known/jwks.json' })
  assert.equal(jwksRes.statusCode, 200)
  const jwks = jwksRes.json() as { keys: JWK[] }
  for (const key of jwks.keys) {
    assert.equal(key.d, undefined, 'no private member in the JWKS')
    assert.equal(key.kid, await calculateJwkThumbprint(key, 'sha256'))
  }
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), {
    algorithms: ['ES256'],
    issuer: 'http://api.test',
    audience: receiver.url,
  })
  assert.equal(protectedHeader.alg, 'ES256')
  assert.ok(jwks.keys.some((k) => k.kid === protectedHeader.kid))
  assert.equal(payload.sub, `tenant:${tenant.slug}`)
  assert.equal(payload.exp! - payload.iat!, 300)
  assert.ok(typeof payload.jti === 'string' && payload.jti.length > 0)
  assert.equal(payload.webhook_id, req.headers['webhook-id'])
  assert.equal(payload.body_sha256, createHash('sha256').update(req.body).digest('base64url'))
  assert.equal(payload.htm, 'POST')
  assert.equal(req.method, 'POST', 'method null means POST')
  await assert.rejects(
    jwtVerify(token, createLocalJWKSet(jwks), { algorithms: ['ES256'], audience: 'http://other.example' }),
  )
})

test('after key rotation the JWKS lists the new and the previous key, and old tokens still verify', async () => {
  const before = await currentSigningKey(db, testSecrets())
  const oldToken = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: before.kid })
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(before.privateKey)

  const { kid, previousKid } = await rotateSigningKey(db, testSecrets())

  assert.equal(previousKid, before.kid)
  const jwks = (await (await app).inject({ method: 'GET', url: '/.well-known/jwks.json' })).json() as { keys: JWK[] }
  assert.deepEqual(
    jwks.keys.map((k) => k.kid),
    [kid, before.kid],
  )
  await jwtVerify(oldToken, createLocalJWKSet(jwks), { algorithms: ['ES256'] })
  assert.equal((await currentSigningKey(db, testSecrets())).kid, kid)
  assert.equal(decodeProtectedHeader(oldToken).kid, before.kid)
})

// ---------------------------------------------------------------- failures and retries

test('a receiver failing twice then answering 2xx: succeeded after 3 attempts with one webhook-id', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  receiver.respond(
    (_q, res) => res.writeHead(500).end('boom'),
    (_q, res) => res.writeHead(503).end(),
  )
  const tenant = await given.tenant(db)
  const automation = await createAutomation(tenant, {
    actions: [
      {
        type: 'webhook',
        config: { url: receiver.url, headers: {}, auth: { type: 'secret', secret: { secret: 'abc' } } },
      },
    ],
  })

  const [id] = await testEvent(tenant, automation.id)
  const outcomes = await drain([id])

  assert.deepEqual(outcomes, ['retrying', 'retrying', 'succeeded'])
  assert.equal(receiver.received.length, 3)
  assert.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, 1)
  assert.equal(new Set(receiver.received.map((r) => r.body.toString())).size, 1, 'the same body every attempt')
  const row = await delivery(id)
  assert.equal(row.status, 'succeeded')
  assert.equal(row.attempts, 3)
  assert.equal(
    row.response_status,
    200 <= row.response_status! && row.response_status! < 300 ? row.response_status : -1,
  )
  assert.equal(row.error, null)
  assert.equal(row.next_attempt_at, null)
})

test('a receiver that always fails: failed after the 7 retries (8 attempts), next attempt times recorded', async (t) => {
  const receiver = await startReceiver((_q, res) => res.writeHead(500).end('x'.repeat(10_000)))
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const automation = await createAutomation(tenant, {
    actions: [{ type: 'webhook', config: { url: receiver.url, headers: {} } }],
  })
  const [id] = await testEvent(tenant, automation.id)

  const [first] = await claim([id])
  assert.equal(await deliverer.deliver(first), 'retrying')
  const retrying = await delivery(id)
  assert.equal(retrying.status, 'retrying')
  assert.ok(retrying.next_attempt_at, 'next_attempt_at is set while retrying')
  const outcomes = await drain([id])

  assert.equal(receiver.received.length, 8)
  assert.equal(outcomes.at(-1), 'failed')
  const row = await delivery(id)
  assert.equal(row.status, 'failed')
  assert.equal(row.attempts, 8)
  assert.equal(row.error, 'http_500')
  assert.equal(row.response_body!.length, 4096, 'response body capped at 4 KiB')
  assert.equal(row.next_attempt_at, null)
})

test('the contract retry schedule is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', async () => {
  const { RETRY_DELAYS_MS, DELIVERY_TIMEOUT_MS } = await import('./webhook-delivery.job.js')
  assert.deepEqual(
    RETRY_DELAYS_MS,
    [5, 300, 1800, 7200, 18000, 36000, 36000].map((s) => s * 1000),
  )
  assert.equal(DELIVERY_TIMEOUT_MS, 10_000)
})

test('a stalled receiver times out and the attempt is retried later', async (t) => {
  const receiver = await startReceiver(() => {
    /* never answers */
  })
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const automation = await createAutomation(tenant, {
    actions: [{ type: 'webhook', config: { url: receiver.url, headers: {} } }],
  })
  const [id] = await testEvent(tenant, automation.id)
  const quick = createWebhookDeliverer({ db, config: privateConfig, log }, { retryDelaysMs: [60_000], timeoutMs: 300 })
  t.after(() => quick.close())

  const started = Date.now()
  const outcome = await quick.deliver((await claim([id]))[0])

  assert.equal(outcome, 'retrying')
  assert.ok(Date.now() - started < 2_000)
  const row = await delivery(id)
  assert.equal(row.error, 'timeout')
  assert.equal(row.response_status, null)
  assert.deepEqual(
    (await jobsFor([id])).map((j) => j.payload.attempt),
    [2],
  )
  await sql`delete from graphile_worker._private_jobs where (payload->>'deliveryId')::bigint = ${id}`.execute(db)
})

test('a 3xx answer is not followed and counts as a failed attempt', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  receiver.respond((_q, res) => res.writeHead(302, { location: `${receiver.url}/elsewhere` }).end())
  const tenant = await given.tenant(db)
  const automation = await createAutomation(tenant, {
    actions: [{ type: 'webhook', config: { url: `${receiver.url}/start`, headers: {} } }],
  })
  const [id] = await testEvent(tenant, automation.id)

  const outcome = await deliverer.deliver((await claim([id]))[0])

  assert.equal(outcome, 'retrying')
  assert.deepEqual(
    receiver.received.map((r) => r.url),
    ['/start'],
  )
  const row = await delivery(id)
  assert.equal(row.response_status, 302)
  assert.equal(row.error, 'redirect_not_followed')
  await sql`delete from graphile_worker._private_jobs where (payload->>'deliveryId')::bigint = ${id}`.execute(db)
})

test('redeliver starts a new attempt series with the same webhook-id', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const automation = await createAutomation(tenant, {
    actions: [{ type: 'webhook', config: { url: receiver.url, headers: {} } }],
  })
  const [id] = await testEvent(tenant, automation.id)
  await drain([id])

  const res = await call(await app, tenant.adminToken, {
    method: 'POST',
    url: `/api/administration/automations/${automation.id}/deliveries/${id}/redeliver`,
  })

  assert.equal(res.statusCode, 202, res.body)
  assert.equal(res.json().status, 'pending')
  assert.equal(res.json().attempts, 0)
  await drain([id])
  assert.equal(receiver.received.length, 2)
  assert.equal(receiver.received[0].headers['webhook-id'], receiver.received[1].headers['webhook-id'])
  assert.equal((await delivery(id)).status, 'succeeded')
  const other = await given.tenant(db)
  const foreign = await call(await app, other.adminToken, {
    method: 'POST',
    url: `/api/administration/automations/${automation.id}/deliveries/${id}/redeliver`,
  })
  assert.equal(foreign.statusCode, 404)
})

test('a host at its concurrency bound: a further delivery waits briefly for a slot, then is deferred instead of holding a worker slot', async (t) => {
  let open = 0
  let mostOpen = 0
  const receiver = await startReceiver((_q, res) => {
    mostOpen = Math.max(mostOpen, ++open)
    setTimeout(() => {
      open--
      res.writeHead(200).end()
    }, 300)
  })
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const automation = await createAutomation(tenant, {
    actions: [{ type: 'webhook', config: { url: receiver.url, headers: {} } }],
  })
  const ids = [...(await testEvent(tenant, automation.id)), ...(await testEvent(tenant, automation.id))]
  const impatient = createWebhookDeliverer(
    { db, config: privateConfig, log },
    { perHostConcurrency: 1, hostSlotWaitMs: 50 },
  )
  t.after(() => impatient.close())

  const outcomes = await Promise.all((await claim(ids)).map((payload) => impatient.deliver(payload)))

  assert.deepEqual(outcomes.sort(), ['deferred', 'succeeded'])
  await drain(ids, impatient)
  assert.equal(receiver.received.length, 2)

  const more = [...(await testEvent(tenant, automation.id)), ...(await testEvent(tenant, automation.id))]
  const patient = createWebhookDeliverer(
    { db, config: privateConfig, log },
    { perHostConcurrency: 1, hostSlotWaitMs: 2000 },
  )
  t.after(() => patient.close())
  const waited = await Promise.all((await claim(more)).map((payload) => patient.deliver(payload)))

  assert.deepEqual(waited, ['succeeded', 'succeeded'], 'the second waited for the slot')
  assert.equal(mostOpen, 1, 'never two requests to the host at once')
  assert.equal(receiver.received.length, 4)
})

test('the per-host bound holds across worker processes: two deliverers never send more than the bound to one host at once', async (t) => {
  let open = 0
  let mostOpen = 0
  const receiver = await startReceiver((_q, res) => {
    mostOpen = Math.max(mostOpen, ++open)
    setTimeout(() => {
      open--
      res.writeHead(200).end()
    }, 150)
  })
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const automation = await createAutomation(tenant, {
    actions: [{ type: 'webhook', config: { url: receiver.url, headers: {} } }],
  })
  const ids: number[] = []
  for (let i = 0; i < 8; i++) ids.push(...(await testEvent(tenant, automation.id)))
  // two worker processes: each its own deliverer (own in-process slots), the same database
  const workers = [0, 1].map(() =>
    createWebhookDeliverer({ db, config: privateConfig, log }, { perHostConcurrency: 2, hostSlotWaitMs: 5_000 }),
  )
  t.after(() => Promise.all(workers.map((w) => w.close())))

  const outcomes = await Promise.all((await claim(ids)).map((payload, i) => workers[i % 2].deliver(payload)))

  assert.deepEqual(outcomes, Array(8).fill('succeeded'))
  assert.equal(receiver.received.length, 8)
  assert.equal(mostOpen, 2, 'at most two requests to the host at once, fleet-wide')
})

// ---------------------------------------------------------------- SSRF guard

test('address guard: loopback, private, link-local, CGNAT, multicast, unspecified and mapped forms are blocked', () => {
  for (const address of [
    '127.0.0.1',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '[::1]',
    '::',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '::ffff:0:7f00:1',
    '::ffff:0:127.0.0.1',
    '::ffff:0:a00:1',
    '64:ff9b::7f00:1',
    '64:ff9b:1:7f00:1::',
    '2002:7f00:1::',
    '2002:c0a8:101::1',
    '2001:0:4136:e378:8000:63bf:80ff:fffe',
    'fd00:ec2::254',
    'fe80::1',
    'ff02::1',
  ]) {
    assert.equal(isBlockedAddress(address), true, address)
  }
  for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700::6810:84e5', '::ffff:8.8.8.8'])
    assert.equal(isBlockedAddress(address), false, address)
})

test('with private networks not allowed, deliveries to blocked addresses fail permanently before connecting', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const targets = [
    `http://127.0.0.1:${receiver.port}/`,
    'http://10.0.0.1/',
    'http://169.254.169.254/latest/meta-data/',
    `http://[::1]:${receiver.port}/`,
    `http://[::ffff:127.0.0.1]:${receiver.port}/`,
    `http://[::ffff:0:7f00:1]:${receiver.port}/`,
    `http://[::ffff:0:127.0.0.1]:${receiver.port}/`,
    `http://localhost:${receiver.port}/`,
    `http://2130706433:${receiver.port}/`,
  ]
  const automation = await createAutomation(tenant, {
    actions: targets.map((url) => ({ type: 'webhook', config: { url, headers: {} } })),
  })
  const ids = await testEvent(tenant, automation.id)
  assert.equal(ids.length, targets.length)

  const outcomes = await Promise.all((await claim(ids)).map((payload) => strictDeliverer.deliver(payload)))

  assert.deepEqual(
    outcomes,
    targets.map(() => 'failed'),
  )
  for (const id of ids) {
    const row = await delivery(id)
    assert.equal(row.error, 'blocked_address', row.url)
    assert.equal(row.attempts, 1)
    assert.equal(row.next_attempt_at, null)
  }
  assert.equal(receiver.received.length, 0, 'nothing reached the receiver')
  assert.deepEqual(await jobsFor(ids), [], 'no retries of a blocked address')
})

test('a name resolving to loopback at delivery time (DNS rebinding) or a mixed answer is blocked', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const automation = await createAutomation(tenant, {
    actions: [{ type: 'webhook', config: { url: `http://127.0.0.1:${receiver.port}/rebind`, headers: {} } }],
  })
  const [id] = await testEvent(tenant, automation.id)
  // the stored URL now names a host that resolved publicly at config time and now answers loopback
  await sql`update automations set actions = jsonb_set(actions, '{0,config,url}', ${JSON.stringify(`http://evil.test:${receiver.port}/`)}::jsonb) where id = ${automation.id}`.execute(
    db,
  )
  const resolve = async () => [
    { address: '93.184.216.34', family: 4 },
    { address: '127.0.0.1', family: 4 },
  ]
  const rebinding = createWebhookDeliverer({ db, config: strictConfig, log }, { resolve })
  t.after(() => rebinding.close())

  const outcome = await rebinding.deliver((await claim([id]))[0])

  assert.equal(outcome, 'failed')
  assert.equal((await delivery(id)).error, 'blocked_address')
  assert.equal(receiver.received.length, 0)
})

// ---------------------------------------------------------------- transactional outbox

test('a rolled-back change sends nothing; a committed one enqueues one delivery series per action', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const both = await createAutomation(tenant, {
    event: 'user.created',
    actions: [
      { type: 'webhook', config: { url: `${receiver.url}/a`, headers: {} } },
      { type: 'webhook', config: { url: `${receiver.url}/b`, headers: {} } },
    ],
  })
  const otherEvent = await createAutomation(tenant, {
    event: 'user.deleted',
    actions: [{ type: 'webhook', config: { url: `${receiver.url}/c`, headers: {} } }],
  })
  const inactive = await createAutomation(tenant, {
    event: 'user.created',
    active: false,
    actions: [{ type: 'webhook', config: { url: `${receiver.url}/d`, headers: {} } }],
  })
  const event = {
    type: 'user.created',
    tenantId: tenant.id,
    actorId: tenant.adminId,
    subjectType: 'user',
    subjectId: 4242,
    data: { username: 'new' },
  }
  const deliveriesOf = (automationId: number) =>
    db
      .selectFrom('webhook_deliveries')
      .select(['id', 'action_index', 'event_id'])
      .where('automation_id', '=', automationId)
      .execute()

  await assert.rejects(
    db.transaction().execute(async (trx) => {
      await recordDomainEvent(trx, event)
      throw new Error('the change fails')
    }),
    /the change fails/,
  )
  assert.deepEqual(await deliveriesOf(both.id), [])

  const eventId = await db.transaction().execute((trx) => recordDomainEvent(trx, event))
  const rows = await deliveriesOf(both.id)
  assert.deepEqual(rows.map((r) => [r.action_index, r.event_id]).sort(), [
    [0, eventId],
    [1, eventId],
  ])
  assert.deepEqual(await deliveriesOf(otherEvent.id), [])
  assert.deepEqual(await deliveriesOf(inactive.id), [])
  await drain(rows.map((r) => r.id))

  assert.deepEqual(receiver.received.map((r) => r.url).sort(), ['/a', '/b'])
  for (const req of receiver.received) {
    const body = expectedBody(req.body)
    assert.equal(body.id, eventId)
    assert.equal(body.type, 'user.created')
    assert.deepEqual(body.data, { subject_type: 'user', subject_id: 4242, actor_id: tenant.adminId, username: 'new' })
  }
})
