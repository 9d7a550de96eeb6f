import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { type TestContext, test } from 'node:test'
import Fastify from 'fastify'
import { ConnectionPermits, runWithConnectionPermits } from '../../platform/db/connection-gate.js'
import { createPool, kyselyOn } from '../../platform/db/database.js'
import { createPgPubSub, publish } from '../../platform/realtime/pg-pubsub.js'
import { openEventStream } from '../../platform/realtime/sse.js'
import { testDatabaseUrl, testDb } from '../../../test/helpers/test-database.js'

const db = testDb()
const until = async (predicate: () => boolean, what: string) => {
  const deadline = Date.now() + 5000
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test('an event stream sends heartbeat comments and runs its close callbacks when the client disconnects', async (t) => {
  let closed = false
  const app = Fastify()
  app.get('/stream', (request, reply) => {
    const stream = openEventStream(request, reply, { heartbeatMs: 30 })
    stream.onClose(() => {
      closed = true
    })
    stream.send('hello', { a: 1 })
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.after(() => app.close())
  const { port } = app.server.address() as AddressInfo

  let text = ''
  const request = http.get({ host: '127.0.0.1', port, path: '/stream' })
  const response = await new Promise<http.IncomingMessage>((resolve) => request.on('response', resolve))
  response.setEncoding('utf8')
  response.on('data', (chunk: string) => {
    text += chunk
  })
  await until(() => (text.match(/: heartbeat\n\n/g) ?? []).length >= 2, 'two heartbeats')
  request.destroy()
  await until(() => closed, 'the close callback')

  assert.equal(response.headers['content-type'], 'text/event-stream; charset=utf-8')
  assert.equal(response.headers['cache-control'], 'no-cache, no-transform')
  assert.match(text, /event: hello\ndata: \{"a":1\}\n\n/)
})

test('LISTEN/NOTIFY reaches every listening connection, and only after commit', async (t) => {
  const received: unknown[][] = [[], []]
  const hubs = [0, 1].map(() => createPgPubSub({ connectionString: async () => testDatabaseUrl() }))
  t.after(() => Promise.all(hubs.map((hub) => hub.close())))
  for (const [index, hub] of hubs.entries())
    await hub.subscribe('test_realtime_channel', (payload) => received[index].push(payload))

  await db.transaction().execute(async (trx) => {
    await publish(trx, 'test_realtime_channel', { n: 1 })
    await new Promise((resolve) => setTimeout(resolve, 100))
    assert.deepEqual(received, [[], []], 'nothing is delivered before commit')
  })
  await db
    .transaction()
    .execute(async (trx) => {
      await publish(trx, 'test_realtime_channel', { n: 2 })
      throw new Error('rollback')
    })
    .catch(() => undefined)
  await publish(db, 'test_realtime_channel', { n: 3 })

  await until(() => received.every((list) => list.length >= 2), 'both listeners')
  await new Promise((resolve) => setTimeout(resolve, 100))
  assert.deepEqual(received, [
    [{ n: 1 }, { n: 3 }],
    [{ n: 1 }, { n: 3 }],
  ])
  await assert.rejects(publish(db, 'bad channel; drop table x', {}))
})

/** What a listener of its own hears on `channel` (closed after the test). */
async function heardOn(t: TestContext, channel: string): Promise<unknown[]> {
  const received: unknown[] = []
  const hub = createPgPubSub({ connectionString: async () => testDatabaseUrl() })
  t.after(() => hub.close())
  await hub.subscribe(channel, (payload) => received.push(payload))
  return received
}

test('messages published outside a transaction go out several in one statement, in order, each once', async (t) => {
  const received = await heardOn(t, 'test_batched_channel')
  // a pool of its own: each statement checks a connection out once
  const pool = createPool(testDatabaseUrl(), { max: 2, allowExitOnIdle: true })
  let statements = 0
  pool.on('acquire', () => statements++)
  const own = kyselyOn(pool)
  t.after(() => own.destroy())

  await Promise.all(Array.from({ length: 50 }, (_, n) => publish(own, 'test_batched_channel', { n })))
  assert.equal(statements, 1, 'fifty messages published at once: one NOTIFY statement')
  await publish(own, 'test_batched_channel', { n: 50 })
  assert.equal(statements, 2, 'a message published once the batch was sent: a statement of its own')

  await until(() => received.length >= 51, 'the 51 messages')
  await new Promise((resolve) => setTimeout(resolve, 100))
  assert.deepEqual(
    received,
    Array.from({ length: 51 }, (_, n) => ({ n })),
  )
})

test('a batch of notices does not wait for the connection permits of the request that opened it', async (t) => {
  const received = await heardOn(t, 'test_gated_channel')
  const own = kyselyOn(createPool(testDatabaseUrl(), { max: 2, allowExitOnIdle: true }))
  t.after(() => own.destroy())
  // the request's tenant holds its only connection permit (its other requests): the request's own
  // checkouts wait, the batch (every sender's) must not
  const permits = new ConnectionPermits(1)
  assert.equal(permits.acquire(), undefined, 'taken at once')
  let sent: Promise<void> = Promise.resolve()
  const scope = runWithConnectionPermits(permits, () => {
    sent = publish(own, 'test_gated_channel', { n: 1 })
  })
  t.after(() => scope.done())
  let timer: NodeJS.Timeout | undefined
  const gated = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('the batch waited for the request’s permit')), 3000)
  })
  await Promise.race([sent, gated]).finally(() => clearTimeout(timer))
  await until(() => received.length === 1, 'the message')
  assert.deepEqual(received, [{ n: 1 }])
})
