import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../app.js'
import { publish } from '../../platform/realtime/pg-pubsub.js'
import { NOTIFICATIONS_CHANNEL } from './sending/fan-out.js'
import { testConfig } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { readEventStream, type ServerSentEvent } from '../../../test/helpers/sse.js'

const db = testDb()

/** An SSE client on one node; `close()` is what the node's death looks like to it. */
async function openStream(app: FastifyInstance, token: string, lastEventId?: string) {
  const { port } = app.server.address() as AddressInfo
  const events: ServerSentEvent[] = []
  const request = http.get({
    host: '127.0.0.1',
    port,
    path: '/api/notifications/stream',
    headers: { authorization: `Bearer ${token}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
  })
  const response = await new Promise<http.IncomingMessage>((resolve, reject) =>
    request.on('response', resolve).on('error', reject),
  )
  readEventStream(response, (event) => events.push(event))
  const waitFor = async (predicate: () => boolean, what: string) => {
    const deadline = Date.now() + 5000
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; events: ${JSON.stringify(events)}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  const notifications = () => events.filter((e) => e.event === 'notification').map((e) => e.data.data.title as string)
  return { response, events, waitFor, notifications, lastId: () => events.at(-1)?.id, close: () => request.destroy() }
}

/** A record as a fan-out job writes it, announced to every node like one; `createdAgo` backdates it (a late commit). */
async function notify(tenant: GivenTenant, userId: number, title: string, createdAgo?: number) {
  const sourceKey = `resume-test:${randomUUID()}`
  await db
    .insertInto('notifications')
    .values({
      tenant_id: tenant.id,
      notifiable_id: userId,
      type: 'genericNotification',
      targetable_type: 'genericNotification',
      targetable_id: 1,
      source_key: sourceKey,
      data: JSON.stringify({ title, body: '', url: '/' }),
      ...(createdAgo ? { created_at: new Date(Date.now() - createdAgo * 1000).toISOString() } : {}),
    })
    .execute()
  await publish(db, NOTIFICATIONS_CHANNEL, { tenantId: tenant.id, userIds: [userId], sourceKey })
}

async function node(): Promise<FastifyInstance> {
  const app = await buildApp({ config: testConfig(), db })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

test('a stream resumed on another node with Last-Event-ID receives every notification created meanwhile, none twice', async (t) => {
  const [nodeA, nodeB] = [await node(), await node()]
  t.after(() => Promise.all([nodeA.close(), nodeB.close()]))
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  await notify(tenant, user.id, 'before connecting')

  const first = await openStream(nodeA, user.token)
  await first.waitFor(() => first.events.length >= 1, 'the first count')
  assert.ok(first.events[0].id, 'every event carries the stream position as its id')
  await notify(tenant, user.id, 'live on A')
  await first.waitFor(() => first.notifications().length === 1, 'the live record on A')
  const lastId = first.lastId()!
  first.close()

  // while the client is away: two records, and one whose transaction began before the last delivered
  // record and committed only now (its created_at is older)
  await notify(tenant, user.id, 'missed 1')
  await notify(tenant, user.id, 'missed 2')
  await notify(tenant, user.id, 'late commit', 5)

  const second = await openStream(nodeB, user.token, lastId)
  assert.equal(second.response.statusCode, 200)
  await second.waitFor(() => second.notifications().length >= 3, 'the replay on B')
  await notify(tenant, user.id, 'live on B')
  await second.waitFor(() => second.notifications().length >= 4, 'the live record on B')
  await new Promise((resolve) => setTimeout(resolve, 200))
  assert.deepEqual(second.notifications().sort(), ['late commit', 'live on B', 'missed 1', 'missed 2'])
  assert.equal(second.events.find((e) => e.event === 'count')?.data.unread, 5)

  // resuming again from B's last position replays nothing
  const third = await openStream(nodeA, user.token, second.lastId())
  await third.waitFor(() => third.events.some((e) => e.event === 'count'), 'the count')
  await new Promise((resolve) => setTimeout(resolve, 200))
  assert.deepEqual(third.notifications(), [])
  second.close()
  third.close()
})

test('a Last-Event-ID this server did not send is a 422 naming the header', async (t) => {
  const nodeA = await node()
  t.after(() => nodeA.close())
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  for (const bad of ['abc', '12.nothex', `1.${'a'.repeat(31)}`]) {
    const res = await nodeA.inject({
      method: 'GET',
      url: '/api/notifications/stream',
      headers: { authorization: `Bearer ${user.token}`, 'last-event-id': bad },
    })
    assert.equal(res.statusCode, 422, bad)
    assert.ok(res.json().errors['Last-Event-ID'], bad)
  }
})

test("a change of the feed on one node hints 'sync' to the tenant's streams on another, a burst as one hint and one after it", async (t) => {
  const [nodeA, nodeB] = [await node(), await node()]
  t.after(() => Promise.all([nodeA.close(), nodeB.close()]))
  const tenant = await given.tenant(db)
  const other = await given.tenant(db)
  const user = await given.user(db, tenant)
  const stranger = await given.user(db, other)
  const channel = await given.folder(db, tenant, { type: 'infoboardChannel' })
  const mine = await openStream(nodeA, user.token)
  const theirs = await openStream(nodeA, stranger.token)
  t.after(() => [mine, theirs].forEach((stream) => stream.close()))
  await mine.waitFor(() => mine.events.length >= 1, 'the first count')
  await theirs.waitFor(() => theirs.events.length >= 1, 'the first count')
  const hints = (stream: typeof mine) => stream.events.filter((event) => event.event === 'sync')

  const post = (title: string) =>
    nodeB.inject({
      method: 'POST',
      url: '/api/infoboard/posts',
      headers: { authorization: `Bearer ${tenant.adminToken}` },
      payload: { channel_id: channel, title, body: '<p>x</p>' },
    })
  assert.equal((await post('first')).statusCode, 201)
  await mine.waitFor(() => hints(mine).length === 1, "the hint of B's write on A")
  assert.equal(hints(mine)[0]!.id, undefined, 'a hint moves no resume position')
  for (const title of ['second', 'third', 'fourth']) assert.equal((await post(title)).statusCode, 201)
  await mine.waitFor(() => hints(mine).length === 2, 'one more hint after the burst')
  await new Promise((resolve) => setTimeout(resolve, 1500))
  assert.equal(hints(mine).length, 2, 'a burst within the window is one hint after it')
  assert.equal(hints(theirs).length, 0, "another tenant's streams hear nothing")
})
