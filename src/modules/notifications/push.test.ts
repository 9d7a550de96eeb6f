/** Web Push, channel preferences and email digests (issue 14), against a real push service and SMTP server on 127.0.0.1. */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import pino from 'pino'
import { buildApp } from '../../app.js'
import { createDeliveryDeps, runFanOut } from './notifications.jobs.js'
import { deliverNotifications } from './delivery/delivery.js'
import { sendDueDigests, DIGEST_ITEMS } from './delivery/digest.js'
import type { DeliverPayload, FanOutPayload } from './sending/fan-out.js'
import { PUSH_RETRY_JOB, type PushRetryPayload } from './push/web-push.js'
import { call, testConfig } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant, type GivenUser } from '../../../test/helpers/given.js'
import {
  decryptPushBody,
  startPushService,
  userAgentKeys,
  verifyVapid,
  type UserAgentKeys,
} from '../../../test/helpers/push-service.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { startSmtpServer } from '../../../test/helpers/smtp.js'

const db = testDb()
const silent = pino({ level: 'silent' })
const pushConfig = (extra: Record<string, string> = {}) =>
  testConfig({ PUSH_ALLOW_PRIVATE_NETWORKS: 'true', PUSH_CONTACT: 'mailto:ops@example.com', ...extra })
let appWithPrivatePush: Promise<FastifyInstance> | undefined
const app = () => (appWithPrivatePush ??= buildApp({ config: pushConfig(), db }))

async function queued<T>(task: string, keyPrefix: string): Promise<Array<{ payload: T; run_at: Date }>> {
  const { rows } = await sql<{ payload: T; run_at: Date }>`
    select j.payload, j.run_at from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = ${task} and j.key like ${`${keyPrefix}%`} order by j.id`.execute(db)
  return rows
}

async function subscribeDevice(user: GivenUser, endpoint: string, keys: UserAgentKeys = userAgentKeys()) {
  const res = await call(await app(), user.token, {
    method: 'POST',
    url: '/api/push-subscriptions',
    payload: { endpoint, expirationTime: null, keys: { p256dh: keys.p256dh, auth: keys.auth } },
  })
  assert.ok([200, 201].includes(res.statusCode), res.body)
  return { id: res.json().data.id as number, keys }
}

/** What a send does end to end, minus the worker process: the API call (which creates the records), the delivery job. */
async function sendAndDeliver(
  tenant: GivenTenant,
  userIds: number[],
  title: string,
  extraConfig: Record<string, string> = {},
  reuse?: ReturnType<typeof createDeliveryDeps>,
) {
  const res = await call(await app(), tenant.adminToken, {
    method: 'POST',
    url: '/api/notifications',
    payload: { title, body: '<p>Hello <b>team</b></p>', url: '/shifts', user_ids: userIds },
  })
  assert.equal(res.statusCode, 202, res.body)
  const sent = await db
    .selectFrom('generic_notifications')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow()
  // a send to a few users creates its records itself; a larger one queues the fan-out
  const [fanOut] = await queued<FanOutPayload>(
    'notifications:fan_out',
    `notifications:fan_out:genericNotification:${sent.id}`,
  )
  if (fanOut) await runFanOut(db, fanOut.payload)
  const deps = reuse ?? createDeliveryDeps({ db, config: pushConfig(extraConfig), log: silent })
  for (const job of await queued<DeliverPayload>(
    'notifications:deliver',
    `notifications:deliver:genericNotification:${sent.id}:`,
  ))
    await deliverNotifications(deps, job.payload)
  return { sendId: sent.id, deps }
}

test('a notification reaches the device: RFC 8291 body decrypted with the subscription key, VAPID JWT verified, TTL and Urgency set', async (t) => {
  const service = await startPushService()
  t.after(service.close)
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const keyRes = await call(await app(), user.token, { method: 'GET', url: '/api/push/vapid-public-key' })
  const publicKey = keyRes.json().public_key as string
  assert.equal(Buffer.from(publicKey, 'base64url').length, 65)
  const device = await subscribeDevice(user, service.endpoint('anna-phone'))

  const { deps } = await sendAndDeliver(tenant, [user.id], 'Shift swap approved')

  assert.equal(service.received.length, 1)
  const push = service.received[0]
  assert.equal(push.headers['content-encoding'], 'aes128gcm')
  assert.equal(push.headers.ttl, '86400')
  assert.equal(push.headers.urgency, 'normal')
  const claims = await verifyVapid(push.headers.authorization, publicKey, service.origin)
  assert.equal(claims.sub, 'mailto:ops@example.com')
  const payload = JSON.parse(decryptPushBody(push.body, device.keys))
  const record = await db
    .selectFrom('notifications')
    .select(['id', 'created_at'])
    .where('tenant_id', '=', tenant.id)
    .where('notifiable_id', '=', user.id)
    .executeTakeFirstOrThrow()
  assert.deepEqual(payload, {
    id: record.id,
    type: 'genericNotification',
    title: 'Shift swap approved',
    body: 'Hello team',
    url: 'http://app.test/shifts',
    created_at: record.created_at,
  })
  const attempts = await db
    .selectFrom('push_deliveries')
    .select(['status', 'attempt', 'response_status'])
    .where('tenant_id', '=', tenant.id)
    .execute()
  assert.deepEqual(attempts, [{ status: 'sent', attempt: 1, response_status: 201 }])

  // the VAPID JWT (valid 12 h) is signed once per push service and reused by the next pushes
  const lifetime = Number(claims.exp) - Date.now() / 1000
  assert.ok(lifetime > 11.9 * 3600 && lifetime <= 12 * 3600, `exp in ${lifetime} s`)
  await sendAndDeliver(tenant, [user.id], 'Second', {}, deps)
  assert.equal(service.received.length, 2)
  assert.equal(service.received[1]!.headers.authorization, push.headers.authorization)
})

test('410 from the push service deletes the subscription; 503 with Retry-After is retried later, honouring it', async (t) => {
  const service = await startPushService((push) =>
    push.path.endsWith('/gone') ? { status: 410 } : { status: 503, headers: { 'retry-after': '120' } },
  )
  t.after(service.close)
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const gone = await subscribeDevice(user, service.endpoint('gone'))
  const busy = await subscribeDevice(user, service.endpoint('busy'))

  const before = Date.now()
  const { deps } = await sendAndDeliver(tenant, [user.id], 'Retry me')

  assert.equal(
    await db
      .selectFrom('push_subscriptions')
      .select('id')
      .where('tenant_id', '=', tenant.id)
      .where('id', '=', gone.id)
      .executeTakeFirst(),
    undefined,
    'pruned',
  )
  const rows = await db
    .selectFrom('push_deliveries')
    .select(['subscription_id', 'status', 'response_status'])
    .where('tenant_id', '=', tenant.id)
    .orderBy('subscription_id')
    .execute()
  assert.deepEqual(
    rows.map((r) => [r.subscription_id, r.status, r.response_status]),
    [
      [gone.id, 'gone', 410],
      [busy.id, 'retrying', 503],
    ].sort((a, b) => Number(a[0]) - Number(b[0])),
  )
  const [retry] = await queued<PushRetryPayload>(PUSH_RETRY_JOB, `push:`).then((jobs) =>
    jobs.filter((j) => j.payload.subscriptionId === busy.id),
  )
  assert.ok(retry, 'a retry was queued')
  assert.ok(
    new Date(retry.run_at).getTime() >= before + 119_000,
    'Retry-After (120 s) outweighs the first backoff (5 s)',
  )

  // the push service recovers; the retry job runs
  const accepting = await startPushService()
  t.after(accepting.close)
  await db
    .updateTable('push_subscriptions')
    .set({ endpoint: accepting.endpoint('busy') })
    .where('tenant_id', '=', tenant.id)
    .where('id', '=', busy.id)
    .execute()
  await deps.pushRetry(db, retry.payload, async (_db, tenantId, id) => {
    const row = await db
      .selectFrom('notifications')
      .select(['id', 'type', 'created_at', 'notifiable_id', 'data'])
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    return {
      tenantId,
      userId: row.notifiable_id,
      notificationId: row.id,
      type: row.type,
      title: 'Retry me',
      body: '',
      url: '/',
      createdAt: row.created_at,
    }
  })
  await deps.pushRetry(db, retry.payload, async () => undefined) // the same job again: nothing
  assert.equal(accepting.received.length, 1)
  const attempts = await db
    .selectFrom('push_deliveries')
    .select(['attempt', 'status'])
    .where('tenant_id', '=', tenant.id)
    .where('subscription_id', '=', busy.id)
    .orderBy('attempt')
    .execute()
  assert.deepEqual(attempts, [
    { attempt: 1, status: 'retrying' },
    { attempt: 2, status: 'sent' },
  ])
})

test('a muted category gets no push and no email, but the in-app record; other categories still do', async (t) => {
  const service = await startPushService()
  t.after(service.close)
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant, { email: 'muted@example.com', wants_email_notifications: true })
  await subscribeDevice(user, service.endpoint('muted'))
  const prefs = await call(await app(), user.token, {
    method: 'GET',
    url: '/api/users/current/notification-preferences',
  })
  assert.equal(prefs.statusCode, 200)
  assert.equal(prefs.json().email_digest, 'immediate')
  const general = prefs.json().preferences.find((p: { key: string }) => p.key === 'general')
  assert.deepEqual(
    { ...general, notification_setting_id: undefined },
    { notification_setting_id: undefined, key: 'general', push: true, email: true },
  )

  const changed = await call(await app(), user.token, {
    method: 'PUT',
    url: '/api/users/current/notification-preferences',
    payload: [{ notification_setting_id: general.notification_setting_id, push: false, email: false }],
  })
  assert.equal(changed.statusCode, 200, changed.body)
  assert.deepEqual(
    changed.json().preferences.find((p: { key: string }) => p.key === 'general'),
    { ...general, push: false, email: false },
  )

  await sendAndDeliver(tenant, [user.id], 'Muted news')
  assert.equal(service.received.length, 0, 'no push')
  assert.equal(
    (
      await db
        .selectFrom('outbound_messages')
        .select('id')
        .where('tenant_id', '=', tenant.id)
        .where('user_id', '=', user.id)
        .execute()
    ).length,
    0,
    'no email',
  )
  assert.equal(
    (
      await db
        .selectFrom('notifications')
        .select('id')
        .where('tenant_id', '=', tenant.id)
        .where('notifiable_id', '=', user.id)
        .execute()
    ).length,
    1,
    'the in-app record',
  )

  await call(await app(), user.token, {
    method: 'PUT',
    url: '/api/users/current/notification-preferences',
    payload: { preferences: [{ notification_setting_id: general.notification_setting_id, push: true }] },
  })
  await sendAndDeliver(tenant, [user.id], 'Loud news')
  assert.equal(service.received.length, 1, 'push again once unmuted')
})

test('preferences and subscriptions are validated: unknown setting, bad keys, plain http endpoint (422 naming the field)', async () => {
  const tenant = await given.tenant(db)
  const other = await given.tenant(db)
  const user = await given.user(db, tenant)
  const foreignSetting = await db
    .selectFrom('notification_settings')
    .select('id')
    .where('tenant_id', '=', other.id)
    .executeTakeFirstOrThrow()
  const bad = await call(await app(), user.token, {
    method: 'PUT',
    url: '/api/users/current/notification-preferences',
    payload: [{ notification_setting_id: foreignSetting.id, push: false }],
  })
  assert.equal(bad.statusCode, 422)
  assert.deepEqual(Object.keys(bad.json().errors), ['0.notification_setting_id'])
  const badDigest = await call(await app(), user.token, {
    method: 'PUT',
    url: '/api/users/current/notification-preferences',
    payload: { email_digest: 'hourly' },
  })
  assert.equal(badDigest.statusCode, 422)

  const keys = userAgentKeys()
  const post = (payload: unknown, target = app()) =>
    target.then((a) =>
      call(a, user.token, { method: 'POST', url: '/api/push-subscriptions', payload: payload as never }),
    )
  const offCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]).toString('base64url')
  const cases: Array<[unknown, string]> = [
    [
      { endpoint: 'https://push.example/x', keys: { p256dh: keys.p256dh.slice(0, 40), auth: keys.auth } },
      'keys.p256dh',
    ],
    [{ endpoint: 'https://push.example/x', keys: { p256dh: offCurve, auth: keys.auth } }, 'keys.p256dh'],
    [
      { endpoint: 'https://push.example/x', keys: { p256dh: keys.p256dh, auth: randomBytes(8).toString('base64url') } },
      'keys.auth',
    ],
    [{ endpoint: 'not a url', keys: { p256dh: keys.p256dh, auth: keys.auth } }, 'endpoint'],
  ]
  for (const [payload, field] of cases) {
    const res = await post(payload)
    assert.equal(res.statusCode, 422, `${field}: ${res.body}`)
    assert.ok(res.json().errors[field], `${field}: ${res.body}`)
  }
  // without PUSH_ALLOW_PRIVATE_NETWORKS a push service must be https
  const strict = buildApp({ config: testConfig(), db })
  const plain = await post(
    { endpoint: 'http://push.example/x', keys: { p256dh: keys.p256dh, auth: keys.auth } },
    strict,
  )
  assert.equal(plain.statusCode, 422)
  assert.ok(plain.json().errors.endpoint)
  await (await strict).close()
})

test('subscriptions belong to one user of one tenant: own list only, 404 for others, the same endpoint moves; deleting a user removes theirs', async () => {
  const tenant = await given.tenant(db)
  const other = await given.tenant(db)
  const anna = await given.user(db, tenant)
  const ben = await given.user(db, tenant)
  const stranger = await given.user(db, other)
  const endpoint = `https://push.example/${randomBytes(6).toString('hex')}`
  const keys = userAgentKeys()
  const first = await call(await app(), anna.token, {
    method: 'POST',
    url: '/api/push-subscriptions',
    payload: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth }, user_agent: 'Firefox' },
  })
  assert.equal(first.statusCode, 201)
  const id = first.json().data.id

  assert.deepEqual((await call(await app(), ben.token, { method: 'GET', url: '/api/push-subscriptions' })).json(), [])
  assert.equal(
    (await call(await app(), ben.token, { method: 'DELETE', url: `/api/push-subscriptions/${id}` })).statusCode,
    404,
  )
  assert.equal(
    (await call(await app(), stranger.token, { method: 'DELETE', url: `/api/push-subscriptions/${id}` })).statusCode,
    404,
  )
  assert.equal(
    (await call(await app(), anna.token, { method: 'GET', url: '/api/push-subscriptions' })).json()[0].user_agent,
    'Firefox',
  )

  const moved = await call(await app(), ben.token, {
    method: 'POST',
    url: '/api/push-subscriptions',
    payload: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } },
  })
  assert.equal(moved.statusCode, 200, 'the same endpoint again')
  assert.equal(moved.json().data.id, id)
  assert.deepEqual((await call(await app(), anna.token, { method: 'GET', url: '/api/push-subscriptions' })).json(), [])

  const deleted = await call(await app(), tenant.adminToken, { method: 'DELETE', url: `/api/users/${ben.id}` })
  assert.equal(deleted.statusCode, 200, deleted.body)
  assert.equal(
    await db
      .selectFrom('push_subscriptions')
      .select('id')
      .where('tenant_id', '=', tenant.id)
      .where('id', '=', id)
      .executeTakeFirst(),
    undefined,
  )
})

test('email digests: one per period with the unread notifications oldest first, "and N more", nothing when none, never twice', async (t) => {
  const smtpServer = await startSmtpServer()
  t.after(smtpServer.close)
  const received = smtpServer.received
  const smtp = smtpServer.url

  const tenant = await given.tenant(db)
  const reader = await given.user(db, tenant, {
    email: 'digest@example.com',
    wants_email_notifications: true,
    email_digest: 'daily',
  })
  const quiet = await given.user(db, tenant, {
    email: 'quiet@example.com',
    wants_email_notifications: true,
    email_digest: 'daily',
  })
  const now = new Date()
  const at = (minutesAgo: number) => new Date(now.getTime() - minutesAgo * 60_000).toISOString()
  for (let i = 0; i < DIGEST_ITEMS + 3; i++)
    await given.notification(db, tenant, reader.id, {
      data: { title: `Item ${i}`, body: '<p>b</p>', url: `/n/${i}` },
      created_at: at(300 - i),
    })
  await given.notification(db, tenant, reader.id, {
    data: { title: 'Already read', body: '', url: '/' },
    created_at: at(10),
    read_at: at(5),
  })
  // a reader who muted email for the category gets no digest of it
  const muting = await given.user(db, tenant, {
    email: 'muting@example.com',
    wants_email_notifications: true,
    email_digest: 'daily',
  })
  await given.notification(db, tenant, muting.id, {
    data: { title: 'Muted item', body: '', url: '/' },
    created_at: at(20),
  })
  const general = await db
    .selectFrom('notification_settings')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .where('key', '=', 'general')
    .executeTakeFirstOrThrow()
  await db
    .insertInto('notification_preferences')
    .values({ tenant_id: tenant.id, user_id: muting.id, notification_setting_id: general.id, email: false })
    .execute()

  // an immediate send to a digest reader does not email at once
  await sendAndDeliver(tenant, [reader.id], 'Digest only', { SMTP_URL: smtp })
  assert.equal(received.length, 0)

  const deps = { ...createDeliveryDeps({ db, config: testConfig({ SMTP_URL: smtp }), log: silent }), digestHour: 7 }
  const later = new Date(now.getTime() + 1000)
  const sent = await Promise.all([
    sendDueDigests(deps, later, { force: true }),
    sendDueDigests(deps, later, { force: true }),
  ])
  assert.equal(sent[0] + sent[1], 1, 'two workers at once: one digest')
  assert.equal(await sendDueDigests(deps, later, { force: true }), 0, 'a retry of the period: none')
  assert.equal(received.length, 1)
  const mail = received[0].replace(/=\r?\n/g, '')
  assert.match(mail, /^To: digest@example\.com\r?$/m)
  assert.match(mail, /^Subject: 24 unread notifications\r?$/m)
  assert.ok(mail.indexOf('Item 0') < mail.indexOf('Item 1'), 'oldest first')
  assert.ok(!mail.includes(`Item ${DIGEST_ITEMS}`) && mail.includes('and 4 more'), 'capped with "and N more"')
  assert.ok(!mail.includes('Already read'))
  void quiet // no unread notifications: no digest
  assert.equal(received.filter((m) => m.includes('quiet@example.com')).length, 0)
  assert.equal(received.filter((m) => m.includes('muting@example.com')).length, 0, 'muted category: no digest')
  assert.equal(
    await sendDueDigests(deps, new Date(now.getTime() + 2000)),
    0,
    'outside DIGEST_HOUR, or with the period claimed: nothing',
  )
})
