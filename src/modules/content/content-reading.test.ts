import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, test } from 'node:test'
import { sql } from 'kysely'
import pino from 'pino'
import { buildApp } from '../../app.js'
import { createWebhookDeliverer, type DeliverWebhookPayload } from '../automations/index.js'
import {
  PUBLISH_JOB,
  readingJobKey,
  REMIND_JOB,
  runPublishJob,
  runRemindJob,
  type PublishPayload,
  type RemindPayload,
} from './index.js'
import type { FanOutPayload } from '../notifications/sending/fan-out.js'
import { runFanOut } from '../notifications/notifications.jobs.js'
import { call, instrumentTestApp, testConfig } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant, type GivenUser } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()
// webhooks go to a real receiver on 127.0.0.1 (private addresses allowed for this file's app)
const config = testConfig({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' })
const app = buildApp({ config, db }).then(instrumentTestApp)
const deliverer = createWebhookDeliverer({ db, config, log: pino({ level: 'silent' }) }, { timeoutMs: 2_000 })
after(async () => {
  await deliverer.close()
  await (await app).close()
})

/** A loopback webhook receiver recording the bodies it gets. */
async function startReceiver() {
  const received: string[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push(Buffer.concat(chunks).toString())
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return { url, received, close }
}

/** Runs the queued webhook deliveries of the tenant (as the worker would). */
async function deliverWebhooks(tenant: GivenTenant) {
  const { rows } = await sql<{ payload: DeliverWebhookPayload }>`
    delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
    where t.id = j.task_id and t.identifier = 'automations:deliver_webhook' and (j.payload->>'tenantId')::bigint = ${tenant.id}
    returning j.payload`.execute(db)
  for (const row of rows) await deliverer.deliver(row.payload)
  return rows.length
}

const iso = (msFromNow: number) => new Date(Date.now() + msFromNow).toISOString()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Pending fan-out jobs whose key starts with `sourcePrefix`, run now; how many there were. */
async function fanOutFor(sourcePrefix: string) {
  const { rows } = await sql<{ payload: FanOutPayload }>`
    select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'notifications:fan_out' and j.key like ${`notifications:fan_out:${sourcePrefix}%`} order by j.id`.execute(
    db,
  )
  for (const { payload } of rows) await runFanOut(db, payload)
  return rows.length
}

async function publishJobs(id: number) {
  const { rows } = await sql<{ payload: PublishPayload; run_at: Date }>`
    select j.payload, j.run_at from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = ${PUBLISH_JOB} and j.key = ${readingJobKey(PUBLISH_JOB, 'infoboardPost', id)}`.execute(db)
  return rows
}

const notified = async (tenant: GivenTenant, type: string, postId: number) =>
  (
    await db
      .selectFrom('notifications')
      .select('notifiable_id')
      .where('tenant_id', '=', tenant.id)
      .where('type', '=', type)
      .where('targetable_id', '=', postId)
      .orderBy('notifiable_id')
      .execute()
  ).map((r) => Number(r.notifiable_id))

const eventsOf = async (tenant: GivenTenant, type: string) =>
  (
    await db
      .selectFrom('domain_events')
      .select('subject_id')
      .where('tenant_id', '=', tenant.id)
      .where('type', '=', type)
      .execute()
  ).map((e) => Number(e.subject_id))

async function webhookDeliveries(tenant: GivenTenant, type: string) {
  return db
    .selectFrom('webhook_deliveries')
    .select('event_data')
    .where('tenant_id', '=', tenant.id)
    .where('event_type', '=', type)
    .execute()
}

async function post(tenant: GivenTenant, token: string, body: Record<string, unknown>) {
  const res = await call(await app, token, { method: 'POST', url: '/api/infoboard/posts', payload: body })
  assert.equal(res.statusCode, 201, res.body)
  return res.json() as Record<string, any>
}

/** A channel everyone with `infoboard.view` may see, an editor (admin) and two employees. */
async function world() {
  const tenant = await given.tenant(db)
  const channel = await given.folder(db, tenant, { type: 'infoboardChannel' })
  const anna = await given.user(db, tenant)
  const ben = await given.user(db, tenant)
  return { tenant, channel, anna, ben }
}

test('scheduled: nothing visible, notified or sent to a webhook before the time; published exactly once after, also with two workers racing', async (t) => {
  const server = await app
  const receiver = await startReceiver()
  t.after(receiver.close)
  const { tenant, channel, anna, ben } = await world()
  const automation = await call(server, tenant.adminToken, {
    method: 'POST',
    url: '/api/administration/automations',
    payload: {
      name: 'published posts',
      event: 'infoboard.post.published',
      actions: [{ type: 'webhook', config: { url: receiver.url, headers: {} } }],
    },
  })
  assert.equal(automation.statusCode, 201, automation.body)

  const at = iso(2500)
  const created = await post(tenant, tenant.adminToken, {
    channel_id: channel,
    title: 'Cold room',
    body: '<p>Safety instruction</p>',
    published_at: at,
    requires_reading_confirmation: true,
  })
  assert.equal(created.published_at, at.slice(0, 19).replace('T', ' '))
  const item = `/api/infoboard/posts/${created.id}`

  // before the time: the employee sees nothing (same 404 as a missing post), nothing is queued or sent
  const hidden = await call(server, anna.token, { method: 'GET', url: item })
  const missing = await call(server, anna.token, { method: 'GET', url: '/api/infoboard/posts/999999999' })
  assert.equal(hidden.statusCode, 404)
  assert.equal(hidden.json().detail, missing.json().detail)
  assert.deepEqual((await call(server, anna.token, { method: 'GET', url: '/api/infoboard/posts' })).json(), [])
  assert.equal((await call(server, anna.token, { method: 'POST', url: `${item}/confirmation` })).statusCode, 404)
  assert.equal(await fanOutFor(`infoboardPostCreated:${created.id}:`), 0)
  assert.deepEqual(await eventsOf(tenant, 'infoboard.post.published'), [])
  assert.equal((await webhookDeliveries(tenant, 'infoboard.post.published')).length, 0)
  await deliverWebhooks(tenant)
  assert.equal(receiver.received.filter((body) => body.includes('infoboard.post.published')).length, 0)
  // the editor sees it; one publish job waits for the time
  assert.equal((await call(server, tenant.adminToken, { method: 'GET', url: item })).statusCode, 200)
  const jobs = await publishJobs(created.id)
  assert.equal(jobs.length, 1)
  assert.equal(new Date(jobs[0].run_at).toISOString().slice(0, 19), at.slice(0, 19))
  // a job run early (a clock-skewed worker) publishes nothing
  assert.equal(await runPublishJob(db, jobs[0].payload), false)

  await sleep(Date.parse(at) - Date.now() + 200)
  // the time has come: two workers race on the same job, exactly one publishes
  const results = await Promise.all([runPublishJob(db, jobs[0].payload), runPublishJob(db, jobs[0].payload)])
  assert.deepEqual(results.sort(), [false, true])
  assert.equal(await runPublishJob(db, jobs[0].payload), false)
  assert.deepEqual(await eventsOf(tenant, 'infoboard.post.published'), [created.id])
  const deliveries = await webhookDeliveries(tenant, 'infoboard.post.published')
  assert.equal(deliveries.length, 1)
  assert.equal((deliveries[0].event_data as { id: number }).id, created.id)
  await deliverWebhooks(tenant)
  const hooks = receiver.received.filter((body) => body.includes('infoboard.post.published'))
  assert.equal(hooks.length, 1)
  assert.equal(JSON.parse(hooks[0]).data.id, created.id)
  assert.equal(await fanOutFor(`infoboardPostCreated:${created.id}:`), 1)
  assert.equal(await fanOutFor(`infoboardPostReadingConfirmationRequired:${created.id}:`), 1)
  assert.deepEqual(
    await notified(tenant, 'infoboardPostCreated', created.id),
    [anna.id, ben.id].sort((a, b) => a - b),
  )
  assert.equal((await call(server, anna.token, { method: 'GET', url: item })).statusCode, 200)
})

test('drafts are for editors; publishing notifies once; edits notify only with notify: true; pinned first', async () => {
  const server = await app
  const { tenant, channel, anna, ben } = await world()
  const draft = await post(tenant, tenant.adminToken, {
    channel_id: channel,
    title: 'Draft',
    body: 'b',
    published_at: null,
  })
  const item = `/api/infoboard/posts/${draft.id}`
  assert.equal(draft.published_at, null)
  assert.equal((await call(server, anna.token, { method: 'GET', url: item })).statusCode, 404)
  assert.equal(await fanOutFor(`infoboardPostCreated:${draft.id}:`), 0)
  assert.equal((await publishJobs(draft.id)).length, 0)
  // the editor's drafts list
  const drafts = await call(server, tenant.adminToken, {
    method: 'GET',
    url: '/api/infoboard/posts?filter[published_at]=null',
  })
  assert.deepEqual(
    drafts.json().map((p: { id: number }) => p.id),
    [draft.id],
  )

  // publishing a draft (published_at now) notifies, once
  const published = await call(server, tenant.adminToken, {
    method: 'PUT',
    url: item,
    payload: { published_at: iso(-1000) },
  })
  assert.equal(published.statusCode, 200, published.body)
  assert.equal(await fanOutFor(`infoboardPostCreated:${draft.id}:`), 1)
  assert.deepEqual(
    await notified(tenant, 'infoboardPostCreated', draft.id),
    [anna.id, ben.id].sort((a, b) => a - b),
  )
  assert.deepEqual(await eventsOf(tenant, 'infoboard.post.published'), [draft.id])

  // an edit without notify: nothing; with notify: true, the audience hears of it
  await call(server, tenant.adminToken, { method: 'PUT', url: item, payload: { title: 'Typo fixed' } })
  assert.equal(await fanOutFor(`infoboardPostUpdated:${draft.id}:`), 0)
  await call(server, tenant.adminToken, { method: 'PUT', url: item, payload: { title: 'New hours', notify: true } })
  assert.equal(await fanOutFor(`infoboardPostUpdated:${draft.id}:`), 1)
  assert.equal(await fanOutFor(`infoboardPostCreated:${draft.id}:`), 1, 'publishing is not repeated')
  assert.deepEqual(await eventsOf(tenant, 'infoboard.post.published'), [draft.id])

  // pinned first, then newest
  const older = await post(tenant, tenant.adminToken, { channel_id: channel, title: 'Pinned', body: 'b', pinned: true })
  const newest = await post(tenant, tenant.adminToken, { channel_id: channel, title: 'Newest', body: 'b' })
  const feed = await call(server, anna.token, { method: 'GET', url: '/api/infoboard/posts?limit=10' })
  assert.deepEqual(
    feed.json().map((p: { id: number }) => p.id),
    [older.id, newest.id, draft.id],
  )

  // comments switched off: nobody comments
  await given.grant(db, tenant, { key: 'comment', to: ['user', anna.id], on: ['folder', channel] })
  await given.grant(db, tenant, { key: 'comment', to: ['user', anna.id], on: ['infoboardPost', newest.id] })
  const comment = (id: number) =>
    call(server, anna.token, { method: 'POST', url: `/api/infoboard/posts/${id}/comments`, payload: { body: 'hi' } })
  assert.equal((await comment(newest.id)).statusCode, 201)
  await call(server, tenant.adminToken, {
    method: 'PUT',
    url: `/api/infoboard/posts/${newest.id}`,
    payload: { comments_enabled: false },
  })
  assert.equal((await comment(newest.id)).statusCode, 403)
})

test('seen and confirmation: idempotent (201 then 200), no oracle, 422 when not asked, notifications marked read, my_state and the pending filter', async () => {
  const server = await app
  const { tenant, channel, anna, ben } = await world()
  const restricted = await given.folder(db, tenant, { type: 'infoboardChannel' })
  await given.grant(db, tenant, { key: 'view', to: ['user', ben.id], on: ['folder', restricted] })
  const must = await post(tenant, tenant.adminToken, {
    channel_id: channel,
    title: 'Must read',
    body: 'b',
    requires_reading_confirmation: true,
    confirmation_due_at: iso(86_400_000),
  })
  const plain = await post(tenant, tenant.adminToken, { channel_id: channel, title: 'FYI', body: 'b' })
  const secret = await post(tenant, tenant.adminToken, {
    channel_id: restricted,
    title: 'Ben only',
    body: 'b',
    requires_reading_confirmation: true,
  })
  await fanOutFor(`infoboardPost`)
  const url = (id: number, what: string) => `/api/infoboard/posts/${id}/${what}`

  const pending = async (user: GivenUser) =>
    (await call(server, user.token, { method: 'GET', url: '/api/infoboard/posts?filter[confirmation]=pending' }))
      .json()
      .map((p: { id: number }) => p.id)
  assert.deepEqual(await pending(anna), [must.id])
  assert.deepEqual((await pending(ben)).sort(), [must.id, secret.id].sort())

  const seen1 = await call(server, anna.token, { method: 'POST', url: url(must.id, 'seen') })
  assert.equal(seen1.statusCode, 201)
  assert.equal(seen1.json().confirmed_at, null)
  const seen2 = await call(server, anna.token, { method: 'POST', url: url(must.id, 'seen') })
  assert.equal(seen2.statusCode, 200)
  assert.equal(seen2.json().seen_at, seen1.json().seen_at)

  const unread = () =>
    db
      .selectFrom('notifications')
      .select(['notifiable_id', 'type'])
      .where('tenant_id', '=', tenant.id)
      .where('targetable_id', '=', must.id)
      .where('read_at', 'is', null)
      .execute()
  assert.equal((await unread()).filter((n) => Number(n.notifiable_id) === anna.id).length, 2)

  const first = await call(server, anna.token, { method: 'POST', url: url(must.id, 'confirmation') })
  assert.equal(first.statusCode, 201, first.body)
  assert.ok(first.json().confirmed_at)
  const again = await call(server, anna.token, { method: 'POST', url: url(must.id, 'confirmation') })
  assert.equal(again.statusCode, 200)
  assert.deepEqual(again.json(), first.json())
  // anna's notifications of the post are read, ben's are not
  const left = await unread()
  assert.equal(left.filter((n) => Number(n.notifiable_id) === anna.id).length, 0)
  assert.equal(left.filter((n) => Number(n.notifiable_id) === ben.id).length, 2)

  const shown = await call(server, anna.token, { method: 'GET', url: `/api/infoboard/posts/${must.id}` })
  assert.deepEqual(shown.json().my_state, first.json())
  assert.equal(shown.json().confirmation_due_at !== null, true)
  assert.deepEqual(await pending(anna), [])
  const confirmedList = await call(server, anna.token, {
    method: 'GET',
    url: '/api/infoboard/posts?filter[confirmation]=confirmed',
  })
  assert.deepEqual(
    confirmedList.json().map((p: { id: number }) => p.id),
    [must.id],
  )

  const notAsked = await call(server, anna.token, { method: 'POST', url: url(plain.id, 'confirmation') })
  assert.equal(notAsked.statusCode, 422)
  assert.equal(notAsked.json().code, 'confirmation_not_required')
  assert.match(notAsked.headers['content-type'] as string, /application\/problem\+json/)

  // outside the audience: the same answer as for a post that does not exist
  for (const what of ['seen', 'confirmation']) {
    const outside = await call(server, anna.token, { method: 'POST', url: url(secret.id, what) })
    const none = await call(server, anna.token, { method: 'POST', url: url(999999999, what) })
    assert.equal(outside.statusCode, 404)
    assert.equal(none.statusCode, 404)
    for (const member of ['status', 'code', 'title', 'detail'])
      assert.equal(outside.json()[member], none.json()[member], member)
  }
  const wrong = await call(server, anna.token, {
    method: 'GET',
    url: '/api/infoboard/posts?filter[confirmation]=maybe',
  })
  assert.equal(wrong.statusCode, 422)
  assert.ok(wrong.json().errors['filter.confirmation'])
})

/**
 * A hand-counted world: the channel is granted to one user, one role and one department; an inactive
 * user of that role, an outsider, and a user added to the department after publishing.
 */
async function reachWorld() {
  const tenant = await given.tenant(db)
  const channel = await given.folder(db, tenant, { type: 'infoboardChannel' })
  const role = await given.role(db, tenant, ['infoboard.view'], { name: 'Cashier' })
  const direct = await given.user(db, tenant, { last_name: 'Direct' })
  const byRole1 = await given.user(db, tenant, { roleId: role, last_name: 'Role1' })
  const byRole2 = await given.user(db, tenant, { roleId: role, last_name: 'Role2' })
  await given.user(db, tenant, { roleId: role, active: false, last_name: 'Inactive' })
  const outsider = await given.user(db, tenant, { last_name: 'Outsider' })
  const d1 = await given.user(db, tenant, { last_name: 'Dept1' })
  const d2 = await given.user(db, tenant, { last_name: 'Dept2' })
  const d3 = await given.user(db, tenant, { last_name: 'Dept3', first_name: '=HYPERLINK("http://x")' })
  const store = await given.department(db, tenant, [d1.id, d2.id, d3.id], 'Store 12')
  const small = await given.department(db, tenant, [direct.id, byRole1.id], 'Office')
  await given.grant(db, tenant, { key: 'view', to: ['user', direct.id], on: ['folder', channel] })
  await given.grant(db, tenant, { key: 'view', to: ['role', role], on: ['folder', channel] })
  await given.grant(db, tenant, { key: 'view', to: ['department', store], on: ['folder', channel] })
  const editor = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, ['infoboard.view', 'infoboard.manage']),
    last_name: 'Editor',
  })
  await given.grant(db, tenant, { key: 'view', to: ['user', editor.id], on: ['folder', channel] })
  const reacher = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, ['infoboard.view', 'infoboard.reach']),
    last_name: 'Reacher',
  })
  await given.grant(db, tenant, { key: 'view', to: ['user', reacher.id], on: ['folder', channel] })
  const p = await post(tenant, tenant.adminToken, {
    channel_id: channel,
    title: 'New opening hours',
    body: 'b',
    requires_reading_confirmation: true,
  })
  // added to the department after publishing: in the audience now
  const late = await given.user(db, tenant, { last_name: 'Late' })
  await db
    .insertInto('department_users')
    .values({ tenant_id: tenant.id, department_id: store, user_id: late.id })
    .execute()
  return { tenant, channel, direct, byRole1, byRole2, outsider, d1, d2, d3, late, editor, reacher, store, small, p }
}

test('reach: audience, seen, confirmed and pending against a hand-counted world, by department, per person and as CSV', async () => {
  const server = await app
  const w = await reachWorld()
  const base = `/api/infoboard/posts/${w.p.id}`
  // readings: direct saw it, byRole1 and d1 confirmed
  assert.equal((await call(server, w.direct.token, { method: 'POST', url: `${base}/seen` })).statusCode, 201)
  assert.equal((await call(server, w.byRole1.token, { method: 'POST', url: `${base}/confirmation` })).statusCode, 201)
  assert.equal((await call(server, w.d1.token, { method: 'POST', url: `${base}/confirmation` })).statusCode, 201)
  // the outsider cannot confirm (not in the audience)
  assert.equal((await call(server, w.outsider.token, { method: 'POST', url: `${base}/confirmation` })).statusCode, 404)

  // audience: admin, direct, byRole1, byRole2, d1, d2, d3, late, editor, reacher = 10 (not the inactive one, not the outsider)
  const reach = await call(server, w.editor.token, { method: 'GET', url: `${base}/reach` })
  assert.equal(reach.statusCode, 200, reach.body)
  assert.deepEqual(reach.json(), {
    audience: 10,
    seen: 3,
    confirmed: 2,
    pending: 8,
    requires_reading_confirmation: true,
    reach_detail: 'named',
    by_department: [
      { id: w.small, name: 'Office', audience: 2, seen: 2, confirmed: 1, pending: 1 },
      { id: w.store, name: 'Store 12', audience: 4, seen: 1, confirmed: 1, pending: 3 },
    ],
  })
  // counts are for editors; the per-person list needs infoboard.reach
  assert.equal((await call(server, w.direct.token, { method: 'GET', url: `${base}/reach` })).statusCode, 403)
  assert.equal((await call(server, w.reacher.token, { method: 'GET', url: `${base}/reach` })).statusCode, 403)
  assert.equal((await call(server, w.editor.token, { method: 'GET', url: `${base}/reach/users` })).statusCode, 403)
  const outsiderEditor = await given.user(db, w.tenant, {
    roleId: await given.role(db, w.tenant, ['infoboard.view', 'infoboard.manage', 'infoboard.reach']),
  })
  assert.equal((await call(server, outsiderEditor.token, { method: 'GET', url: `${base}/reach` })).statusCode, 404)
  assert.equal(
    (await call(server, outsiderEditor.token, { method: 'GET', url: `${base}/reach/users` })).statusCode,
    404,
  )

  const people = async (state: string, extra = '') => {
    const res = await call(server, w.reacher.token, {
      method: 'GET',
      url: `${base}/reach/users?filter[state]=${state}${extra}`,
    })
    assert.equal(res.statusCode, 200, res.body)
    return res.json() as Array<Record<string, any>>
  }
  const pendingIds = (await people('pending')).map((u) => u.id).sort((a: number, b: number) => a - b)
  const everyone = [
    w.tenant.adminId,
    w.direct.id,
    w.byRole1.id,
    w.byRole2.id,
    w.d1.id,
    w.d2.id,
    w.d3.id,
    w.late.id,
    w.editor.id,
    w.reacher.id,
  ]
  const expectedPending = everyone.filter((id) => id !== w.byRole1.id && id !== w.d1.id).sort((a, b) => a - b)
  assert.deepEqual(pendingIds, expectedPending)
  assert.deepEqual(
    (await people('confirmed')).map((u) => u.id).sort((a: number, b: number) => a - b),
    [w.byRole1.id, w.d1.id].sort((a, b) => a - b),
  )
  const seen = await people('seen')
  assert.equal(seen.length, 3)
  const byRole1 = seen.find((u) => u.id === w.byRole1.id)!
  assert.equal(byRole1.role, 'Cashier')
  assert.equal(byRole1.departments, 'Office')
  assert.equal(byRole1.state, 'confirmed')
  // paginated
  const page = await people('pending', '&limit=3&offset=3')
  assert.equal(page.length, 3)

  const csv = await call(server, w.reacher.token, {
    method: 'GET',
    url: `${base}/reach/users`,
    headers: { accept: 'text/csv' },
  })
  assert.equal(csv.statusCode, 200)
  assert.match(csv.headers['content-type'] as string, /^text\/csv/)
  const lines = csv.body.trim().split('\n')
  assert.equal(lines[0], 'id,username,first_name,last_name,role,departments,state,seen_at,confirmed_at,reminded_at')
  assert.equal(lines.length, 11)
  assert.ok(lines.some((line) => line.startsWith(`${w.d1.id},`) && line.includes(',confirmed,')))
  // a name a spreadsheet would run as a formula is exported as text
  const d3Line = lines.find((line) => line.startsWith(`${w.d3.id},`))!
  assert.ok(d3Line.includes(`"'=HYPERLINK(""http://x"")"`), d3Line)
})

test('reminders reach only the pending, once per 24 hours, and record who was reminded', async () => {
  const server = await app
  const w = await reachWorld()
  const base = `/api/infoboard/posts/${w.p.id}`
  await call(server, w.byRole1.token, { method: 'POST', url: `${base}/confirmation` })
  await call(server, w.d2.token, { method: 'POST', url: `${base}/confirmation` })
  await call(server, w.direct.token, { method: 'POST', url: `${base}/seen` })

  assert.equal((await call(server, w.direct.token, { method: 'POST', url: `${base}/reminders` })).statusCode, 403)
  const sent = await call(server, w.editor.token, { method: 'POST', url: `${base}/reminders` })
  assert.equal(sent.statusCode, 201, sent.body)
  // pending: the 10 of the audience minus 2 confirmed minus the editor who sends it
  const expected = [w.tenant.adminId, w.direct.id, w.byRole2.id, w.d1.id, w.d3.id, w.late.id, w.reacher.id].sort(
    (a, b) => a - b,
  )
  assert.equal(sent.json().recipients, expected.length)
  assert.equal(await fanOutFor(`infoboardPostReadingConfirmationReminder:${w.p.id}:`), 1)
  assert.deepEqual(await notified(w.tenant, 'infoboardPostReadingConfirmationReminder', w.p.id), expected)
  const recorded = await db
    .selectFrom('content_reminder_recipients')
    .select('user_id')
    .where('tenant_id', '=', w.tenant.id)
    .where('reminder_id', '=', sent.json().id)
    .orderBy('user_id')
    .execute()
  assert.deepEqual(
    recorded.map((r) => Number(r.user_id)),
    expected,
  )
  const listed = await call(server, w.reacher.token, {
    method: 'GET',
    url: `${base}/reach/users?filter[state]=pending`,
  })
  assert.ok(listed.json().find((u: { id: number }) => u.id === w.d1.id).reminded_at)

  const tooSoon = await call(server, w.editor.token, { method: 'POST', url: `${base}/reminders` })
  assert.equal(tooSoon.statusCode, 429)
  assert.equal(tooSoon.json().code, 'reminder_too_soon')
  assert.ok(Number(tooSoon.headers['retry-after']) > 86_000)
  // a day later another reminder may go
  await sql`update infoboard_posts set reminded_at = now() - interval '25 hours' where tenant_id = ${w.tenant.id} and id = ${w.p.id}`.execute(
    db,
  )
  assert.equal((await call(server, w.editor.token, { method: 'POST', url: `${base}/reminders` })).statusCode, 201)

  // deleting the post deletes what was read and reminded of it
  assert.equal((await call(server, w.editor.token, { method: 'DELETE', url: base })).statusCode, 204)
  for (const table of ['content_reads', 'content_reminders'] as const)
    assert.equal(
      (
        await db
          .selectFrom(table)
          .select('tenant_id')
          .where('tenant_id', '=', w.tenant.id)
          .where('target_id', '=', w.p.id)
          .execute()
      ).length,
      0,
      table,
    )

  const plain = await post(w.tenant, w.tenant.adminToken, { channel_id: w.channel, title: 'FYI', body: 'b' })
  const notAsked = await call(server, w.editor.token, {
    method: 'POST',
    url: `/api/infoboard/posts/${plain.id}/reminders`,
  })
  assert.equal(notAsked.statusCode, 422)
  assert.equal(notAsked.json().code, 'confirmation_not_required')
})

test('the automatic reminder at confirmation_due_at: scheduled with the post, moved and removed with its due time, reaches only the pending once', async () => {
  const server = await app
  const { tenant, channel, anna, ben } = await world()
  const jobs = async (id: number) =>
    (
      await sql<{ payload: RemindPayload; run_at: Date }>`
        select j.payload, j.run_at from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
        where t.identifier = ${REMIND_JOB} and j.key = ${readingJobKey(REMIND_JOB, 'infoboardPost', id)}`.execute(db)
    ).rows
  // whole seconds: the due time is stored to the second
  const wholeSeconds = (ms: number) => new Date(Math.ceil((Date.now() + ms) / 1000) * 1000).toISOString()
  const due = wholeSeconds(3_600_000)
  const p = await post(tenant, tenant.adminToken, {
    channel_id: channel,
    title: 'Cold room',
    body: 'b',
    requires_reading_confirmation: true,
    confirmation_due_at: due,
  })
  const [job] = await jobs(p.id)
  assert.ok(job, 'one reminder job, keyed by the post')
  assert.equal(new Date(job.run_at).toISOString(), new Date(due).toISOString())

  // the due time moves: the job moves with it; the old due time's payload no longer reminds anyone
  const later = wholeSeconds(7_200_000)
  const moved = await call(server, tenant.adminToken, {
    method: 'PUT',
    url: `/api/infoboard/posts/${p.id}`,
    payload: { confirmation_due_at: later },
  })
  assert.equal(moved.statusCode, 200, moved.body)
  const after = await jobs(p.id)
  assert.equal(after.length, 1)
  assert.equal(new Date(after[0]!.run_at).toISOString(), new Date(later).toISOString())
  assert.equal(await runRemindJob(db, job.payload), null, 'a stale due time reminds nobody')

  await call(server, anna.token, { method: 'POST', url: `/api/infoboard/posts/${p.id}/confirmation` })
  // the job's run at its time: only the pending (ben; the admin who wrote it is in the audience too)
  assert.equal(await runRemindJob(db, after[0]!.payload), 2)
  assert.equal(await fanOutFor(`infoboardPostReadingConfirmationReminder:${p.id}:`), 1)
  assert.deepEqual(
    await notified(tenant, 'infoboardPostReadingConfirmationReminder', p.id),
    [tenant.adminId, ben.id].sort((a, b) => a - b),
  )
  const recorded = await db
    .selectFrom('content_reminders')
    .select(['actor_id', 'recipients'])
    .where('tenant_id', '=', tenant.id)
    .where('target_id', '=', p.id)
    .execute()
  assert.deepEqual(recorded, [{ actor_id: null, recipients: 2 }])
  assert.equal(await runRemindJob(db, after[0]!.payload), null, 'run twice: reminded once')
  const manual = await call(server, tenant.adminToken, {
    method: 'POST',
    url: `/api/infoboard/posts/${p.id}/reminders`,
  })
  assert.equal(manual.statusCode, 429, 'the automatic reminder counts for the 24 hours')

  // no longer asking for a confirmation: the pending job goes
  const other = await post(tenant, tenant.adminToken, {
    channel_id: channel,
    title: 'Other',
    body: 'b',
    requires_reading_confirmation: true,
    confirmation_due_at: due,
  })
  assert.equal((await jobs(other.id)).length, 1)
  await call(server, tenant.adminToken, {
    method: 'PUT',
    url: `/api/infoboard/posts/${other.id}`,
    payload: { requires_reading_confirmation: false },
  })
  assert.equal((await jobs(other.id)).length, 0)
  // a due time already past schedules nothing; no due time schedules nothing
  const past = await post(tenant, tenant.adminToken, {
    channel_id: channel,
    title: 'Past',
    body: 'b',
    requires_reading_confirmation: true,
    confirmation_due_at: iso(-60_000),
  })
  assert.equal((await jobs(past.id)).length, 0)
})

test('reach: a user in two departments counts once in the totals and once in each department', async () => {
  const server = await app
  const w = await reachWorld()
  const base = `/api/infoboard/posts/${w.p.id}`
  assert.equal((await call(server, w.d2.token, { method: 'POST', url: `${base}/confirmation` })).statusCode, 201)
  // d2 is in Store 12 and now in Office too; a grant elsewhere makes Office a department some grant names,
  // so d2's profile holds both departments
  await db
    .insertInto('department_users')
    .values({ tenant_id: w.tenant.id, department_id: w.small, user_id: w.d2.id })
    .execute()
  const elsewhere = await given.folder(db, w.tenant, { type: 'infoboardChannel' })
  await given.grant(db, w.tenant, { key: 'view', to: ['department', w.small], on: ['folder', elsewhere] })
  const reach = await call(server, w.editor.token, { method: 'GET', url: `${base}/reach` })
  assert.equal(reach.statusCode, 200, reach.body)
  assert.deepEqual(reach.json(), {
    audience: 10,
    seen: 1,
    confirmed: 1,
    pending: 9,
    requires_reading_confirmation: true,
    reach_detail: 'named',
    by_department: [
      { id: w.small, name: 'Office', audience: 3, seen: 1, confirmed: 1, pending: 2 },
      { id: w.store, name: 'Store 12', audience: 4, seen: 1, confirmed: 1, pending: 3 },
    ],
  })
})

test('reach_detail counts_only hides names and departments with fewer than 5 people in the audience', async () => {
  const server = await app
  const w = await reachWorld()
  const base = `/api/infoboard/posts/${w.p.id}`
  // a fifth member of Store 12 (so it has 5 in the audience); Office keeps 2
  const fifth = await given.user(db, w.tenant)
  await db
    .insertInto('department_users')
    .values({ tenant_id: w.tenant.id, department_id: w.store, user_id: fifth.id })
    .execute()
  const setting = (value: string, token = w.tenant.adminToken) =>
    call(server, token, {
      method: 'PUT',
      url: '/api/administration/reading-settings',
      payload: { reach_detail: value },
    })
  assert.equal((await setting('counts_only', w.editor.token)).statusCode, 403)
  const set = await setting('counts_only')
  assert.equal(set.statusCode, 200, set.body)
  assert.deepEqual(set.json(), { reach_detail: 'counts_only' })
  assert.equal((await setting('everything')).statusCode, 422)

  const reach = (await call(server, w.editor.token, { method: 'GET', url: `${base}/reach` })).json()
  assert.equal(reach.reach_detail, 'counts_only')
  assert.equal(reach.audience, 11)
  assert.deepEqual(
    reach.by_department.map((d: { name: string; audience: number }) => [d.name, d.audience]),
    [['Store 12', 5]],
  )
  const named = await call(server, w.reacher.token, { method: 'GET', url: `${base}/reach/users` })
  assert.equal(named.statusCode, 403)
  assert.equal(named.json().code, 'reach_counts_only')
  const csv = await call(server, w.tenant.adminToken, {
    method: 'GET',
    url: `${base}/reach/users`,
    headers: { accept: 'text/csv' },
  })
  assert.equal(csv.statusCode, 403)

  await setting('named')
  const back = (await call(server, w.editor.token, { method: 'GET', url: `${base}/reach` })).json()
  assert.equal(back.by_department.length, 2)
})

test('manual entries: drafts hidden, seen and confirmation as for posts', async () => {
  const server = await app
  const tenant = await given.tenant(db)
  const reader = await given.user(db, tenant)
  const chapter = (
    await call(server, tenant.adminToken, {
      method: 'POST',
      url: '/api/manuals/chapters',
      payload: { title: 'Safety' },
    })
  ).json()
  const create = (body: Record<string, unknown>) =>
    call(server, tenant.adminToken, {
      method: 'POST',
      url: `/api/manuals/chapters/${chapter.id}/entries`,
      payload: { title: 'Lifting', body: 'b', ...body },
    })
  const draft = (await create({ published_at: null })).json()
  const entry = (await create({ requires_reading_confirmation: true })).json()
  assert.equal(
    (await call(server, reader.token, { method: 'GET', url: `/api/manuals/entries/${draft.id}` })).statusCode,
    404,
  )
  assert.equal(
    (await call(server, reader.token, { method: 'POST', url: `/api/manuals/entries/${draft.id}/confirmation` }))
      .statusCode,
    404,
  )
  const first = await call(server, reader.token, {
    method: 'POST',
    url: `/api/manuals/entries/${entry.id}/confirmation`,
  })
  assert.equal(first.statusCode, 201, first.body)
  const again = await call(server, reader.token, {
    method: 'POST',
    url: `/api/manuals/entries/${entry.id}/confirmation`,
  })
  assert.equal(again.statusCode, 200)
  const shown = await call(server, reader.token, { method: 'GET', url: `/api/manuals/entries/${entry.id}` })
  assert.deepEqual(shown.json().my_state, first.json())
  assert.deepEqual(await eventsOf(tenant, 'manuals.entry.published'), [entry.id])
  const reach = await call(server, tenant.adminToken, { method: 'GET', url: `/api/manuals/entries/${entry.id}/reach` })
  assert.equal(reach.json().confirmed, 1)
})

test('reach: a post in a channel below a restricted one reaches only who may view every channel on the path (the folders rule, set-based)', async () => {
  const server = await app
  const tenant = await given.tenant(db)
  const parent = await given.folder(db, tenant, { type: 'infoboardChannel' })
  const child = await given.folder(db, tenant, { type: 'infoboardChannel', parentId: parent })
  const member = await given.user(db, tenant, { last_name: 'Member' })
  const childOnly = await given.user(db, tenant, { last_name: 'ChildOnly' })
  const outsider = await given.user(db, tenant, { last_name: 'Outsider' })
  await given.grant(db, tenant, { key: 'view', to: ['user', member.id], on: ['folder', parent] })
  await given.grant(db, tenant, { key: 'view', to: ['user', member.id], on: ['folder', child] })
  await given.grant(db, tenant, { key: 'view', to: ['user', childOnly.id], on: ['folder', child] })

  const p = await post(tenant, tenant.adminToken, { channel_id: child, title: 't', body: 'b' })
  const people = await call(server, tenant.adminToken, {
    method: 'GET',
    url: `/api/infoboard/posts/${p.id}/reach/users`,
  })

  assert.equal(people.statusCode, 200, people.body)
  const ids = (people.json() as Array<{ id: number }>).map((u) => u.id).sort((a, b) => a - b)
  assert.deepEqual(
    ids,
    [tenant.adminId, member.id].sort((a, b) => a - b),
  )
  // one actor sees the same: the parent's grants leave childOnly out, the child's leave the outsider out
  const show = (token: string) => call(server, token, { method: 'GET', url: `/api/infoboard/posts/${p.id}` })
  assert.equal((await show(member.token)).statusCode, 200)
  assert.equal((await show(childOnly.token)).statusCode, 404)
  assert.equal((await show(outsider.token)).statusCode, 404)
})
