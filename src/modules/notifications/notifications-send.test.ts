import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { sql } from 'kysely'
import pino from 'pino'
import { parseCrontab } from 'graphile-worker'
import { buildApp } from '../../app.js'
import { buildTestApp, call, testConfig } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { startSmtpServer } from '../../../test/helpers/smtp.js'
import { readEventStream } from '../../../test/helpers/sse.js'
import { createDeliveryDeps, NOTIFICATION_CRON, runFanOut } from './notifications.jobs.js'
import { deliverNotifications } from './delivery/delivery.js'
import type { DeliverPayload, FanOutPayload } from './sending/fan-out.js'
import { enqueueNotifications } from './index.js'
import { INLINE_FAN_OUT_MAX } from './sending/send.service.js'
import { settleSyncClock } from '../../platform/sync/change-log.js'

const db = testDb()
const silent = pino({ level: 'silent' })

async function send(token: string, payload: Record<string, unknown>) {
  return call(await buildTestApp(), token, { method: 'POST', url: '/api/notifications', payload })
}

/** Payloads of queued jobs (graphile-worker's tables) by task and key prefix. */
async function queued<T>(task: string, keyPrefix: string): Promise<T[]> {
  const { rows } = await sql<{ payload: T }>`
    select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = ${task} and j.key like ${`${keyPrefix}%`} order by j.id`.execute(db)
  return rows.map((r) => r.payload)
}

/** The tenant's latest send (by time: a small send's id is reserved beforehand, so ids need not follow the order of sends). */
async function lastSend(tenant: GivenTenant) {
  return db
    .selectFrom('generic_notifications')
    .select(['id', 'title', 'body', 'url', 'user_id', 'user_ids', 'department_ids'])
    .where('tenant_id', '=', tenant.id)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow()
}

async function fanOutJob(sendId: number): Promise<FanOutPayload> {
  const [payload] = await queued<FanOutPayload>(
    'notifications:fan_out',
    `notifications:fan_out:genericNotification:${sendId}`,
  )
  assert.ok(payload, 'the fan-out job was queued')
  return payload
}

const recordsOf = (tenant: GivenTenant) =>
  db
    .selectFrom('notifications')
    .select(['id', 'notifiable_id', 'type', 'targetable_type', 'targetable_id', 'data'])
    .where('tenant_id', '=', tenant.id)
    .orderBy('notifiable_id')
    .execute()

test('a send needs notifications.send', async () => {
  const tenant = await given.tenant(db)
  const employee = await given.user(db, tenant)

  const res = await send(employee.token, { title: 'Hi', body: 'x', url: '/home', user_ids: [employee.id] })

  assert.equal(res.statusCode, 403)
  assert.equal(
    await db.selectFrom('generic_notifications').select('id').where('tenant_id', '=', tenant.id).executeTakeFirst(),
    undefined,
  )
})

test('a send is validated: recipients, unknown IDs (named), url scheme, sizes, unknown keys', async () => {
  const tenant = await given.tenant(db)
  const other = await given.tenant(db)
  const user = await given.user(db, tenant)
  const deleted = await given.user(db, tenant, { deleted_at: sql`now()` })
  const foreignUser = await given.user(db, other)
  const foreignDepartment = await given.department(db, other)
  const ok = { title: 'Hi', body: '<p>x</p>', url: '/home', user_ids: [user.id] }

  const none = await send(tenant.adminToken, { title: 'Hi', body: 'x', url: '/home' })
  const empty = await send(tenant.adminToken, {
    title: 'Hi',
    body: 'x',
    url: '/home',
    user_ids: [],
    department_ids: [],
  })
  const unknown = await send(tenant.adminToken, {
    ...ok,
    user_ids: [user.id, foreignUser.id, deleted.id],
    department_ids: [foreignDepartment],
  })

  assert.equal(none.statusCode, 422)
  assert.ok(none.json().errors.user_ids)
  assert.equal(empty.statusCode, 422)
  assert.equal(unknown.statusCode, 422)
  assert.match(
    unknown.json().errors.user_ids[0],
    new RegExp(`${Math.min(foreignUser.id, deleted.id)}.*${Math.max(foreignUser.id, deleted.id)}`),
  )
  assert.doesNotMatch(unknown.json().errors.user_ids[0], new RegExp(`\\b${user.id}\\b`))
  assert.match(unknown.json().errors.department_ids[0], new RegExp(String(foreignDepartment)))
  const stored = await db.selectFrom('generic_notifications').select('id').where('tenant_id', '=', tenant.id).execute()
  assert.deepEqual(stored, [], 'a refused send stores nothing')
  for (const url of [
    'javascript:alert(1)',
    'JavaScript:alert(1)',
    'data:text/html,x',
    '//evil.example/x',
    '/\\evil.example',
    'ftp://host/x',
    'home',
    'https://',
  ]) {
    const res = await send(tenant.adminToken, { ...ok, url })
    assert.equal(res.statusCode, 422, url)
    assert.ok(res.json().errors.url, url)
  }
  for (const url of ['https://example.com/a?b=1', 'http://intranet.local/x', '/infoboard/posts/1']) {
    assert.equal((await send(tenant.adminToken, { ...ok, url })).statusCode, 202, url)
  }
  assert.equal((await send(tenant.adminToken, { ...ok, title: '' })).statusCode, 422)
  assert.equal((await send(tenant.adminToken, { ...ok, title: 'x'.repeat(256) })).statusCode, 422)
  const multiByte = await send(tenant.adminToken, { ...ok, body: 'ä'.repeat(40_000) }) // 80,000 bytes < 64 Ki chars
  assert.equal(multiByte.statusCode, 422)
  assert.ok(multiByte.json().errors.body)
  assert.equal((await send(tenant.adminToken, { ...ok, body: 'x'.repeat(70_000) })).statusCode, 422)
  assert.equal((await send(tenant.adminToken, { ...ok, body: 'x'.repeat(2 * 1024 * 1024) })).statusCode, 413)
  assert.equal((await send(tenant.adminToken, { ...ok, extra: true })).statusCode, 422)
})

test('a send answers 202, stores the sanitized send, queues the fan-out and records notification.sent', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)

  const res = await send(tenant.adminToken, {
    title: 'Fire drill',
    url: 'https://example.com/drill',
    user_ids: [user.id],
    body: '<p onclick="x()">Meet <b>outside</b><script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">a</a><a href="https://ok.example/">b</a></p>',
  })

  assert.equal(res.statusCode, 202)
  assert.deepEqual(res.json(), { status: 'success', data: null })
  const sent = await lastSend(tenant)
  assert.equal(sent.body, '<p>Meet <b>outside</b><a>a</a><a href="https://ok.example/">b</a></p>')
  assert.doesNotMatch(sent.body, /script|onerror|onclick|javascript/)
  assert.equal(sent.user_id, tenant.adminId)
  // a send to a few listed users creates its records in its own transaction (no fan-out job), and
  // queues their delivery there too
  assert.deepEqual(await queued('notifications:fan_out', `notifications:fan_out:genericNotification:${sent.id}`), [])
  assert.deepEqual(
    (await recordsOf(tenant)).map((r) => [r.notifiable_id, r.targetable_id]),
    [[user.id, sent.id]],
  )
  const [delivery] = await queued<DeliverPayload>(
    'notifications:deliver',
    `notifications:deliver:genericNotification:${sent.id}:`,
  )
  assert.deepEqual(delivery, { tenantId: tenant.id, sourceKey: `genericNotification:${sent.id}`, userIds: [user.id] })
  const event = await db
    .selectFrom('domain_events')
    .select(['type', 'actor_id', 'subject_type', 'subject_id', 'data'])
    .where('tenant_id', '=', tenant.id)
    .where('type', '=', 'notification.sent')
    .executeTakeFirstOrThrow()
  assert.deepEqual(event, {
    type: 'notification.sent',
    actor_id: tenant.adminId,
    subject_type: 'genericNotification',
    subject_id: String(sent.id),
    data: { title: 'Fire drill', url: 'https://example.com/drill', user_ids: [user.id], department_ids: [] },
  })
})

test('a send to more than 100 listed users is fanned out by the worker; to 100 or fewer, in the send itself', async () => {
  const tenant = await given.tenant(db)
  const users = await Promise.all(Array.from({ length: INLINE_FAN_OUT_MAX + 1 }, () => given.user(db, tenant)))
  const ids = users.map((u) => u.id).sort((a, b) => a - b)

  assert.equal((await send(tenant.adminToken, { title: 'Many', body: 'x', url: '/x', user_ids: ids })).statusCode, 202)
  const many = await lastSend(tenant)
  assert.equal((await recordsOf(tenant)).length, 0, 'no record before the fan-out job ran')
  assert.equal(await runFanOut(db, await fanOutJob(many.id)), ids.length)

  assert.equal(
    (await send(tenant.adminToken, { title: 'Few', body: 'x', url: '/x', user_ids: ids.slice(0, INLINE_FAN_OUT_MAX) }))
      .statusCode,
    202,
  )
  const few = await lastSend(tenant)
  assert.deepEqual(await queued('notifications:fan_out', `notifications:fan_out:genericNotification:${few.id}`), [])
  const records = await db
    .selectFrom('notifications')
    .select('notifiable_id')
    .where('tenant_id', '=', tenant.id)
    .where('targetable_id', '=', few.id)
    .orderBy('notifiable_id')
    .execute()
  assert.deepEqual(
    records.map((r) => r.notifiable_id),
    ids.slice(0, INLINE_FAN_OUT_MAX),
  )
})

test('fan-out merges department members and users once each, skipping group, inactive, deleted and blacked-out accounts; a retry adds nothing', async () => {
  const tenant = await given.tenant(db)
  const a = await given.user(db, tenant)
  const b = await given.user(db, tenant)
  const c = await given.user(db, tenant)
  const group = await given.user(db, tenant, { group_account: true, first_name: '', last_name: '' })
  const inactive = await given.user(db, tenant, { active: false })
  const deleted = await given.user(db, tenant, { deleted_at: sql`now()` })
  const blackedOut = await given.user(db, tenant, { deleted_at: sql`now()`, blacked_out_at: sql`now()` })
  const bystander = await given.user(db, tenant)
  const department = await given.department(db, tenant, [a.id, b.id, group.id, inactive.id, deleted.id, blackedOut.id])
  const secondDepartment = await given.department(db, tenant, [b.id])

  const res = await send(tenant.adminToken, {
    title: 'T',
    body: '<p>B</p>',
    url: '/x',
    department_ids: [department, secondDepartment],
    user_ids: [b.id, c.id, group.id],
  })
  assert.equal(res.statusCode, 202)
  const sent = await lastSend(tenant)
  const job = await fanOutJob(sent.id)
  const created = await runFanOut(db, job)
  const retried = await runFanOut(db, job)

  assert.equal(created, 3)
  assert.equal(retried, 0)
  const records = await recordsOf(tenant)
  assert.deepEqual(
    records.map((r) => r.notifiable_id),
    [a.id, b.id, c.id].sort((x, y) => x - y),
  )
  assert.ok(!records.some((r) => r.notifiable_id === bystander.id))
  assert.deepEqual(records[0].data, { title: 'T', body: '<p>B</p>', url: '/x' })
  assert.equal(records[0].type, 'genericNotification')
  assert.equal(records[0].targetable_type, 'genericNotification')
  assert.equal(records[0].targetable_id, sent.id)

  const deliveries = await queued<DeliverPayload>(
    'notifications:deliver',
    `notifications:deliver:genericNotification:${sent.id}:`,
  )
  assert.equal(deliveries.length, 1, 'the retry queued no second delivery')
  assert.deepEqual(
    deliveries[0].userIds,
    records.map((r) => r.notifiable_id),
  )

  const mine = await call(await buildTestApp(), a.token, {
    method: 'GET',
    url: '/api/notifications?relations=targetable',
  })
  assert.equal(mine.json()[0].targetable.id, sent.id)
  assert.equal(mine.json()[0].targetable.title, 'T')
})

/** A tenant whose department of 2,500 users was just sent a notification: its queued fan-out job. */
async function largeSend() {
  const tenant = await given.tenant(db)
  const { rows } = await sql<{ id: number }>`
    insert into users (tenant_id, username, password_hash, role_id)
    select ${tenant.id}, 'bulk-' || g || '-' || ${tenant.id}, 'x', ${tenant.employeeRoleId} from generate_series(1, 2500) g
    returning id`.execute(db)
  const department = await given.department(
    db,
    tenant,
    rows.map((r) => r.id),
  )
  await send(tenant.adminToken, { title: 'All hands', body: 'x', url: '/x', department_ids: [department] })
  const job = await fanOutJob((await lastSend(tenant)).id)
  const count = async () =>
    Number(
      (
        await db
          .selectFrom('notifications')
          .select((eb) => eb.fn.countAll<number>().as('c'))
          .where('tenant_id', '=', tenant.id)
          .executeTakeFirstOrThrow()
      ).c,
    )
  return { job, count }
}

test('fan-out of a large department inserts in chunks and stays idempotent', async () => {
  const { job, count } = await largeSend()

  assert.equal(await runFanOut(db, job), 2500)
  assert.equal(await runFanOut(db, job), 0)
  assert.equal(await count(), 2500)
})

test('a fan-out writes time-ordered record ids and one pending change record per record; a reader numbers them one by one', async (t) => {
  const { rows: server } = await sql<{ v7: boolean }>`select to_regprocedure('uuidv7()') is not null as v7`.execute(db)
  if (!server[0]!.v7) return t.skip('this PostgreSQL has no uuidv7() (before 18): random ids stay')
  const { job } = await largeSend()

  await runFanOut(db, job)

  const tenantId = 'spec' in job ? job.spec.tenantId : job.tenantId
  const records = () =>
    db
      .selectFrom('notifications as n')
      .leftJoin('sync_changes as c', (join) =>
        join
          .onRef('c.tenant_id', '=', 'n.tenant_id')
          .on('c.entity', '=', 'notification')
          .on('c.entity_id', '=', sql<string>`n.id::text`),
      )
      .select(['n.id', 'n.notifiable_id', 'c.user_id as change_user_id', 'c.version'])
      .where('n.tenant_id', '=', tenantId)
      .execute()
  const written = await records()
  assert.equal(written.length, 2500)
  assert.ok(
    written.every((r) => r.id[14] === '7'),
    'UUID version 7: a chunk appends to the primary keys of notifications and sync_changes',
  )
  assert.ok(written.every((r) => r.change_user_id !== null && Number(r.change_user_id) === Number(r.notifiable_id)))
  assert.ok(
    written.every((r) => r.version === null),
    'pending: the fan-out never takes the tenant clock',
  )
  await settleSyncClock(db, tenantId)
  const numbered = await records()
  assert.equal(new Set(numbered.map((r) => r.version)).size, 2500, 'a version per change record')
  assert.ok(numbered.every((r) => r.version !== null))
})

test('an aborted fan-out stops between committed chunks and the retry completes it exactly once', async () => {
  const { job, count } = await largeSend()

  await assert.rejects(runFanOut(db, job, AbortSignal.abort()), /interrupted by shutdown/)
  const afterAbort = await count()
  const resumed = await runFanOut(db, job)

  assert.ok(afterAbort > 0 && afterAbort < 2500, `one chunk committed before stopping (${afterAbort})`)
  assert.equal(resumed, 2500 - afterAbort)
  assert.equal(await count(), 2500)
})

test('content modules queue notifications in their transaction with enqueueNotifications', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const sourceKey = `infoboardPost:77:created:${tenant.id}`

  await db.transaction().execute((trx) =>
    enqueueNotifications(trx, {
      tenantId: tenant.id,
      type: 'infoboardPostCreated',
      targetableType: 'infoboardPost',
      targetableId: 77,
      sourceKey,
      data: { title: 'New post', body: '<p>Hi<script>x</script></p>', url: '/infoboard/posts/77' },
      recipients: { userIds: [user.id] },
    }),
  )
  const [job] = await queued<FanOutPayload>('notifications:fan_out', `notifications:fan_out:${sourceKey}`)
  await runFanOut(db, job)

  const list = await call(await buildTestApp(), user.token, {
    method: 'GET',
    url: '/api/notifications/type/infoboardPost/77',
  })
  assert.equal(list.json().length, 1)
  assert.equal(list.json()[0].type, 'infoboardPostCreated')
  assert.equal(list.json()[0].data.body, '<p>Hi</p>')
})

test('delivery emails those who want it, once; push goes to devices only (no subscription: nothing stored)', async () => {
  const tenant = await given.tenant(db)
  const wants = await given.user(db, tenant, { email: 'wants@example.com', wants_email_notifications: true })
  const noEmail = await given.user(db, tenant, { wants_email_notifications: true })
  const optedOut = await given.user(db, tenant, { email: 'quiet@example.com' })
  await send(tenant.adminToken, {
    title: 'Lunch',
    body: '<p>Pizza &amp; salad</p>',
    url: '/canteen',
    user_ids: [wants.id, noEmail.id, optedOut.id],
  })
  const sent = await lastSend(tenant)
  const [payload] = await queued<DeliverPayload>(
    'notifications:deliver',
    `notifications:deliver:genericNotification:${sent.id}:`,
  )
  const deps = createDeliveryDeps({ db, config: testConfig(), log: silent })

  await deliverNotifications(deps, payload)
  await deliverNotifications(deps, payload) // a retried job

  const messages = await db
    .selectFrom('outbound_messages')
    .select(['channel', 'status', 'user_id', 'recipient', 'subject', 'body_html', 'body_text'])
    .where('tenant_id', '=', tenant.id)
    .orderBy('channel')
    .orderBy('user_id')
    .execute()
  assert.equal(
    messages.filter((m) => m.channel === 'push').length,
    0,
    'push payloads are not parked in outbound_messages',
  )
  const emails = messages.filter((m) => m.channel === 'email')
  assert.equal(emails.length, 1)
  assert.equal(emails[0].recipient, 'wants@example.com')
  assert.equal(emails[0].status, 'stored')
  assert.equal(emails[0].subject, 'Lunch')
  assert.match(emails[0].body_html!, /<p>Pizza &amp; salad<\/p>/)
  assert.match(emails[0].body_html!, /href="http:\/\/app\.test\/canteen"/)
  assert.equal(emails[0].body_text, 'Lunch\n\nPizza & salad\n\nhttp://app.test/canteen')
  assert.equal((await recordsOf(tenant)).length, 3, 'delivery never touches the in-app records')
})

test('with SMTP_URL set, email goes out over SMTP with the title as subject, and a retry does not resend', async (t) => {
  const smtpServer = await startSmtpServer()
  t.after(smtpServer.close)
  const received = smtpServer.received
  const port = smtpServer.port

  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant, { email: 'anna@example.com', wants_email_notifications: true })
  await send(tenant.adminToken, {
    title: 'Shift swap approved',
    body: '<p>See you <strong>Monday</strong></p>',
    url: 'https://example.com/shifts',
    user_ids: [user.id],
  })
  const sent = await lastSend(tenant)
  const [payload] = await queued<DeliverPayload>(
    'notifications:deliver',
    `notifications:deliver:genericNotification:${sent.id}:`,
  )
  const deps = createDeliveryDeps({ db, config: testConfig({ SMTP_URL: `smtp://127.0.0.1:${port}` }), log: silent })

  await deliverNotifications(deps, payload)
  await deliverNotifications(deps, payload)

  assert.equal(received.length, 1)
  assert.match(received[0], /^Subject: Shift swap approved\r?$/m)
  assert.match(received[0], /^To: anna@example\.com\r?$/m)
  assert.match(received[0], /text\/plain/)
  assert.match(received[0], /<strong>Monday<\/strong>/)
  const email = await db
    .selectFrom('outbound_messages')
    .select(['status'])
    .where('tenant_id', '=', tenant.id)
    .where('channel', '=', 'email')
    .executeTakeFirstOrThrow()
  assert.equal(email.status, 'sent')
})

test('a failing SMTP server fails the delivery job (to be retried) without touching the in-app record', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant, { email: 'ben@example.com', wants_email_notifications: true })
  await send(tenant.adminToken, { title: 'T', body: 'x', url: '/x', user_ids: [user.id] })
  const sent = await lastSend(tenant)
  const [payload] = await queued<DeliverPayload>(
    'notifications:deliver',
    `notifications:deliver:genericNotification:${sent.id}:`,
  )
  const closedPort = await new Promise<number>((resolve) => {
    const probe = http.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
  const deps = createDeliveryDeps({
    db,
    config: testConfig({ SMTP_URL: `smtp://127.0.0.1:${closedPort}` }),
    log: silent,
  })

  await assert.rejects(deliverNotifications(deps, payload))

  assert.equal((await recordsOf(tenant)).length, 1)
  const emails = await db
    .selectFrom('outbound_messages')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .where('channel', '=', 'email')
    .execute()
  assert.equal(emails.length, 0, 'nothing is recorded as sent, so the retry sends it')
})

test('the SSE stream sends the unread count, then a record created by a send and the new count', async (t) => {
  const app = await buildApp({ config: testConfig(), db })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const other = await given.user(db, tenant)
  await given.notification(db, tenant, user.id)

  const events: Array<{ event: string; data: any }> = []
  let waiter: (() => void) | undefined
  const request = http.get({
    host: '127.0.0.1',
    port,
    path: '/api/notifications/stream',
    headers: { authorization: `Bearer ${user.token}` },
  })
  const response = await new Promise<http.IncomingMessage>((resolve, reject) =>
    request.on('response', resolve).on('error', reject),
  )
  t.after(async () => {
    request.destroy()
    await app.close()
  })
  readEventStream(response, (event) => {
    events.push({ event: event.event, data: event.data })
    waiter?.()
  })
  const waitFor = async (predicate: () => boolean) => {
    const deadline = Date.now() + 5000
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out; events so far: ${JSON.stringify(events)}`)
      await new Promise<void>((resolve) => {
        waiter = resolve
        setTimeout(resolve, 50)
      })
    }
  }

  assert.equal(response.statusCode, 200)
  assert.match(String(response.headers['content-type']), /^text\/event-stream/)
  await waitFor(() => events.length >= 1)
  assert.deepEqual(events[0], { event: 'count', data: { unread: 1 } })
  // the other recipient listens too (one message reaches both: each gets its own record and count)
  const otherEvents: Array<{ event: string; data: any }> = []
  const otherRequest = http.get({
    host: '127.0.0.1',
    port,
    path: '/api/notifications/stream',
    headers: { authorization: `Bearer ${other.token}` },
  })
  t.after(() => {
    otherRequest.destroy()
  })
  readEventStream(
    await new Promise<http.IncomingMessage>((resolve, reject) =>
      otherRequest.on('response', resolve).on('error', reject),
    ),
    (event) => {
      otherEvents.push({ event: event.event, data: event.data })
    },
  )
  await waitFor(() => otherEvents.length >= 1)

  await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/notifications',
    payload: { title: 'Live', body: '<p>now</p>', url: '/live', user_ids: [user.id, other.id] },
  })
  const sent = await lastSend(tenant)
  await waitFor(
    () => events.some((e) => e.event === 'notification') && events.filter((e) => e.event === 'count').length >= 2,
  )

  const record = events.find((e) => e.event === 'notification')!.data
  assert.equal(record.notifiable_id, user.id)
  assert.equal(record.targetable_id, sent.id)
  assert.deepEqual(record.data, { title: 'Live', body: '<p>now</p>', url: '/live' })
  const shown = await call(app, user.token, { method: 'GET', url: `/api/notifications/${record.id}` })
  assert.deepEqual(record, shown.json(), 'the event carries the record as GET /api/notifications/{id} returns it')
  assert.deepEqual(events.filter((e) => e.event === 'count').at(-1), { event: 'count', data: { unread: 2 } })
  await waitFor(() => otherEvents.filter((e) => e.event === 'count').length >= 2)
  assert.deepEqual(
    otherEvents.filter((e) => e.event === 'notification').map((e) => [e.data.notifiable_id, e.data.targetable_id]),
    [[other.id, sent.id]],
  )
  assert.deepEqual(
    otherEvents.filter((e) => e.event === 'count').map((e) => e.data.unread),
    [0, 1],
  )

  await call(app, user.token, { method: 'PUT', url: '/api/notifications', payload: { read_at: '2024-01-01 00:00:00' } })
  await waitFor(() => events.at(-1)?.event === 'count' && events.at(-1)?.data.unread === 0)
})

test('the stream requires authentication', async () => {
  const res = await (await buildTestApp()).inject({ method: 'GET', url: '/api/notifications/stream' })
  assert.equal(res.statusCode, 401)
})

test('the retention and digest cron lines are valid graphile-worker crontab', () => {
  const items = parseCrontab(NOTIFICATION_CRON.join('\n'))
  assert.deepEqual(
    items.map((i) => i.task),
    ['notifications:purge_read', 'notifications:digest'],
  )
})
