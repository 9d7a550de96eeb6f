import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, test } from 'node:test'
import { sql } from 'kysely'
import pino from 'pino'
import { buildApp } from '../../app.js'
import { AUTOMATION_EVENTS, createWebhookDeliverer, type DeliverWebhookPayload } from '../automations/index.js'
import { call, testConfig } from '../../../test/helpers/build-test-app.js'
import { given, TEST_PASSWORD, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

// Issue 40: one audit path. A role or department change is a domain event: the audit log and
// automations both subscribe to it.

const db = testDb()
const config = testConfig({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' })
const app = buildApp({ config, db })
const deliverer = createWebhookDeliverer({ db, config, log: pino({ level: 'silent' }) }, { timeoutMs: 2_000 })
after(async () => {
  await deliverer.close()
  await (await app).close()
})

interface Received {
  url: string
  body: { id: string; type: string; data: Record<string, unknown> }
}

/** A loopback receiver recording every request's path and JSON body. */
async function startReceiver() {
  const received: Received[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ url: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8')) })
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

const request = async (tenant: GivenTenant, method: string, url: string, payload?: object) =>
  call(await app, tenant.adminToken, { method: method as 'GET', url, ...(payload ? { payload } : {}) })

async function subscribe(tenant: GivenTenant, event: string, url: string) {
  const res = await request(tenant, 'POST', '/api/administration/automations', {
    name: event,
    event,
    actions: [{ type: 'webhook', config: { url, headers: {} } }],
  })
  assert.equal(res.statusCode, 201, res.body)
  return res.json() as { id: number }
}

/** Runs the queued deliveries of these automations (the worker's job, by hand); returns their event types. */
async function deliver(automationIds: number[]): Promise<string[]> {
  // the deliveries first, then their jobs: on Citus the job queue (a local table) joins no distributed table
  const ids = (
    await db.selectFrom('webhook_deliveries').select('id').where('automation_id', 'in', automationIds).execute()
  ).map((d) => Number(d.id))
  const { rows } = await sql<{ payload: DeliverWebhookPayload }>`
    delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
    where t.id = j.task_id and t.identifier = 'automations:deliver_webhook'
      and (j.payload->>'deliveryId')::bigint = any(${ids})
    returning j.payload`.execute(db)
  for (const row of rows) assert.equal(await deliverer.deliver(row.payload), 'succeeded')
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select('event_type')
    .where('automation_id', 'in', automationIds)
    .orderBy('id')
    .execute()
  return deliveries.map((d) => d.event_type)
}

async function auditRecords(tenant: GivenTenant, targetType: string) {
  const res = await request(tenant, 'GET', `/api/administration/audit-log?filter[target_type]=${targetType}&sort=id`)
  assert.equal(res.statusCode, 200, res.body)
  return res.json() as Array<Record<string, any>>
}

test('a role change reaches the automation subscribed to role.updated, and the audit log still shows it', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const roleId = await given.role(db, tenant, [], { name: 'Old role' })
  const automation = await subscribe(tenant, 'role.updated', `${receiver.url}/roles`)

  const res = await request(tenant, 'PUT', `/api/roles/${roleId}`, { name: 'Shift lead', permissions: ['users.view'] })
  assert.equal(res.statusCode, 200, res.body)

  assert.deepEqual(await deliver([automation.id]), ['role.updated'])
  assert.equal(receiver.received.length, 1)
  const [sent] = receiver.received
  assert.equal(sent!.url, '/roles')
  assert.equal(sent!.body.type, 'role.updated')
  assert.deepEqual(sent!.body.data, {
    subject_type: 'role',
    subject_id: roleId,
    actor_id: tenant.adminId,
    changed: ['name', 'permissions'],
  })
  // the audit record is the same as before issue 40: its action, target and before → after values
  const [record] = (await auditRecords(tenant, 'role')).filter((r) => r.action === 'role.update')
  assert.equal(record?.target_id, String(roleId))
  assert.equal(record?.actor_id, tenant.adminId)
  assert.deepEqual(record?.changes, { name: ['Old role', 'Shift lead'], permissions: [[], ['users.view']] })
})

test('a department change reaches the automations subscribed to it, and the audit log still shows it', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const member = await given.user(db, tenant)
  const newcomer = await given.user(db, tenant)
  const departmentId = await given.department(db, tenant, [member.id], 'Kitchen')
  const updated = await subscribe(tenant, 'department.updated', `${receiver.url}/updated`)
  const members = await subscribe(tenant, 'department.membersReplaced', `${receiver.url}/members`)
  const roles = await subscribe(tenant, 'role.updated', `${receiver.url}/roles`)

  const res = await request(tenant, 'PUT', `/api/departments/${departmentId}`, {
    name: 'Bakery',
    user_ids: [newcomer.id],
  })
  assert.equal(res.statusCode, 200, res.body)

  assert.deepEqual(await deliver([updated.id, members.id, roles.id]), [
    'department.updated',
    'department.membersReplaced',
  ])
  const byUrl = Object.fromEntries(receiver.received.map((r) => [r.url, r.body]))
  assert.deepEqual(Object.keys(byUrl).sort(), ['/members', '/updated'])
  assert.deepEqual(byUrl['/updated']!.data, {
    subject_type: 'department',
    subject_id: departmentId,
    actor_id: tenant.adminId,
    changed: ['name'],
  })
  assert.deepEqual(byUrl['/members']!.data, {
    subject_type: 'department',
    subject_id: departmentId,
    actor_id: tenant.adminId,
    user_ids: [newcomer.id],
  })
  const records = await auditRecords(tenant, 'department')
  assert.deepEqual(
    records.map((r) => [r.action, r.target_id, r.changes]),
    [
      ['department.update', String(departmentId), { name: ['Kitchen', 'Bakery'] }],
      ['department.members_replace', String(departmentId), { user_ids: [[member.id], [newcomer.id]] }],
    ],
  )
})

test('security events are audited only: no automation may listen to them, and `*` does not receive them', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const refused = await request(tenant, 'POST', '/api/administration/automations', {
    name: 'sign-ins',
    event: 'auth.signInFailed',
    actions: [{ type: 'webhook', config: { url: `${receiver.url}/x`, headers: {} } }],
  })
  assert.equal(refused.statusCode, 422, refused.body)
  const everything = await subscribe(tenant, '*', `${receiver.url}/all`)

  const user = await given.user(db, tenant)
  const failed = await (
    await app
  ).inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: user.username, password: `not-${TEST_PASSWORD}` },
  })
  assert.equal(failed.statusCode, 401, failed.body)
  const unknown = await (
    await app
  ).inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: 'no-such-user', password: TEST_PASSWORD },
  })
  assert.equal(unknown.statusCode, 401, unknown.body)
  await request(tenant, 'POST', '/api/roles', { name: 'Night shift', permissions: [] })

  assert.deepEqual(await deliver([everything.id]), ['role.created'])
  const records = (await auditRecords(tenant, 'user')).filter((r) => r.action === 'auth.login_failed')
  assert.deepEqual(
    records.map((r) => [r.target_id, r.changes]),
    [
      [String(user.id), { method: 'password', reason: 'wrong_password', login: user.username }],
      [null, { method: 'password', reason: 'unknown_user', login: 'no-such-user' }],
    ],
  )
  // the event itself keeps no login name (domain events are kept after an erasure)
  const events = await db
    .selectFrom('domain_events')
    .select(['subject_type', 'subject_id', 'data'])
    .where('tenant_id', '=', tenant.id)
    .where('type', '=', 'auth.signInFailed')
    .orderBy('occurred_at')
    .execute()
  assert.deepEqual(events, [
    { subject_type: 'user', subject_id: String(user.id), data: { method: 'password' } },
    { subject_type: 'tenant', subject_id: String(tenant.id), data: { method: 'password' } },
  ])
})

test('an event without a transaction to join (the notification reset) reaches its automation with its audit record', async (t) => {
  const receiver = await startReceiver()
  t.after(receiver.close)
  const tenant = await given.tenant(db)
  const automation = await subscribe(tenant, 'notifications.cleared', `${receiver.url}/cleared`)
  await given.notification(db, tenant, tenant.adminId)

  const res = await request(tenant, 'DELETE', '/api/administration/notifications/reset')
  assert.equal(res.statusCode, 200, res.body)

  // an automation listens: the event, its audit record and the delivery are written in one transaction
  assert.deepEqual(await deliver([automation.id]), ['notifications.cleared'])
  assert.equal(receiver.received[0]?.body.data.deleted, 1)
  const [record] = (await auditRecords(tenant, 'tenant')).filter((r) => r.action === 'notification.reset')
  assert.deepEqual([record?.target_id, record?.changes], [String(tenant.id), { deleted: 1 }])
})

test('the automation docs list every event type an automation may listen to', () => {
  const doc = fs.readFileSync(new URL('../../../docs/decisions/automations-webhooks.md', import.meta.url), 'utf8')
  const missing = AUTOMATION_EVENTS.filter((type) => {
    const dot = type.lastIndexOf('.')
    const [subject, verb] = [type.slice(0, dot), type.slice(dot + 1)]
    // `role.created|updated|deleted`, or a content alias listed once for its `.created|updated|deleted`
    const listed = new RegExp(`\`${subject.replaceAll('.', '\\.')}\\.(\\w+\\|)*${verb}(\\|\\w+)*\``)
    return !listed.test(doc) && !(doc.includes(`\`${subject}\``) && doc.includes('`.created|updated|deleted`'))
  })
  assert.deepEqual(missing, [])
})
