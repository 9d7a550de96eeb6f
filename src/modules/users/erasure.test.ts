import assert from 'node:assert/strict'
import { randomBytes, randomInt } from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { after, test } from 'node:test'
import { sql } from 'kysely'
import pino from 'pino'
import { buildTestApp, call, testConfig } from '../../../test/helpers/build-test-app.js'
import { given, TEST_PASSWORD } from '../../../test/helpers/given.js'
import { userAgentKeys } from '../../../test/helpers/push-service.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { fixture, multipart } from '../../../test/fixtures/users/forms.js'
import { createDataExports } from './users-data-export.js'
import { createFileStorage } from '../../platform/storage/file-storage.js'
import { tenantTables } from '../../platform/db/table-classes.js'
import { PERSONAL_DATA, personalDataRuleGaps } from './users-personal-data.js'

// a storage directory of this file's own: the scan below reads all of it
const storageDir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-api-erasure-'))
process.env.TEST_STORAGE_DIR = storageDir
after(() => fs.rm(storageDir, { recursive: true, force: true }))
const db = testDb()

/** Every file path and every file's bytes under `dir`, as text. */
async function storageText(dir: string): Promise<string> {
  const parts: string[] = []
  for (const entry of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    const full = path.join(entry.parentPath, entry.name)
    parts.push(full)
    if (entry.isFile()) parts.push((await fs.readFile(full)).toString('latin1'))
  }
  return parts.join('\n')
}

/** Every row of every tenant table of the tenant as text, plus its failed logins and queued jobs. */
async function tenantDump(tenantId: number, slug: string): Promise<Map<string, string>> {
  const dump = new Map<string, string>()
  for (const table of tenantTables()) {
    const { rows } = await sql<{
      row: string
    }>`select t::text as row from ${sql.table(table)} t where tenant_id = ${tenantId}`.execute(db)
    dump.set(table, rows.map((r) => r.row).join('\n'))
  }
  const { rows: failures } = await sql<{
    row: string
  }>`select t::text as row from login_failures t where tenant_slug = ${slug}`.execute(db)
  dump.set('login_failures', failures.map((r) => r.row).join('\n'))
  const { rows: jobs } = await sql<{
    row: string
  }>`select payload::text as row from graphile_worker._private_jobs where payload::text like ${`%"tenantId":${tenantId}%`} or payload::text like ${`%"tenant_id":${tenantId}%`}`.execute(
    db,
  )
  dump.set('graphile_worker jobs', jobs.map((r) => r.row).join('\n'))
  return dump
}

const found = (dump: Map<string, string>, needles: string[]) =>
  [...dump].flatMap(([table, text]) => needles.filter((n) => text.includes(n)).map((n) => `${table}: ${n}`))

test('every text-like column of every tenant table has a personal-data rule', async () => {
  assert.deepEqual(await personalDataRuleGaps(db), [])
  assert.deepEqual(Object.keys(PERSONAL_DATA).sort(), tenantTables().sort())
})

test('a column added without a rule is reported (new tables are covered without edits to the test)', async () => {
  const gaps = await db
    .transaction()
    .execute(async (trx) => {
      await sql`alter table infoboard_comments add column nickname text`.execute(trx)
      throw new RollbackWith(await personalDataRuleGaps(trx))
    })
    .catch((error: unknown) => {
      if (error instanceof RollbackWith) return error.gaps
      throw error
    })
  assert.deepEqual(gaps, ['infoboard_comments.nickname: text column without a personal-data rule'])
  assert.deepEqual(await personalDataRuleGaps(db), [])
})

class RollbackWith extends Error {
  constructor(readonly gaps: string[]) {
    super('rolled back')
  }
}

test('erasure leaves no personal value of the person in any tenant table nor in the storage directory', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const marker = `mk${randomBytes(6).toString('hex')}`
  const ip = `10.${randomInt(1, 250)}.${randomInt(1, 250)}.${randomInt(1, 250)}`
  const userAgent = `${marker}-agent/1.0`
  const email = `${marker}-mail@example.com`
  const as = (token: string) => ({ 'user-agent': userAgent, authorization: `Bearer ${token}` })

  // the person, created by the administrator with every personal field holding a marker
  const created = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart(
      {
        username: `${marker}user`,
        password: TEST_PASSWORD,
        first_name: `${marker}-first`,
        last_name: `${marker}-last`,
        role_id: String(tenant.adminRoleId),
        group_account: 'false',
        email,
        phone: `${marker}-phone`,
        street: `${marker}-street`,
        zipcode: `${marker}-zip`,
        city: `${marker}-city`,
        staff_number: `${marker}-staff`,
        default_route: `/${marker}-route`,
        birthdate: '1980-02-03',
      },
      {
        profile_picture: { bytes: fixture('pixel.png'), filename: `${marker}-portrait.png`, contentType: 'image/png' },
      },
    ),
  })
  assert.equal(created.statusCode, 201, created.body)
  const person: number = created.json().data.id
  const picture: string = created.json().data.profile_picture
  assert.ok(picture)
  await db
    .updateTable('users')
    .set({ external_id: `${marker}-external`, gender: 'female' })
    .where('tenant_id', '=', tenant.id)
    .where('id', '=', person)
    .execute()

  // a login from a marked address, user agent and device
  const login = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: {
      tenant: tenant.slug,
      username: `${marker}user`,
      password: TEST_PASSWORD,
      device_name: `${marker}-phone-device`,
    },
    remoteAddress: ip,
    headers: { 'user-agent': userAgent },
  })
  assert.equal(login.statusCode, 200, login.body)
  const token: string = login.json().access_token

  // a failed login (login_failures keeps the typed name)
  const failed = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: `${marker}user`, password: 'wrong-password' },
    remoteAddress: ip,
    headers: { 'user-agent': userAgent },
  })
  assert.equal(failed.statusCode, 401)
  // exercise the modules as the person, from the marked address and browser
  const asPerson = async (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) => {
    const res = await app.inject({ method, url, payload, remoteAddress: ip, headers: as(token) })
    assert.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode} ${res.body}`)
    return res
  }
  await asPerson('GET', '/api/users/current')
  const keys = userAgentKeys()
  await asPerson('POST', '/api/push-subscriptions', {
    endpoint: `https://push.example/${marker}-endpoint`,
    expirationTime: null,
    keys: { p256dh: keys.p256dh, auth: keys.auth },
  })
  await asPerson('POST', '/api/users/current/totp', { password: TEST_PASSWORD })
  // administrative changes by the person (audited with their address and user agent)
  const colleague = await given.user(db, tenant)
  await asPerson('PUT', `/api/users/${colleague.id}`, { city: 'Hamburg' })
  // changes about the person by the administrator (audited with the marked values)
  const changed = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/users/${person}`,
    payload: { city: `${marker}-newcity`, phone: `${marker}-newphone` },
  })
  assert.equal(changed.statusCode, 200, changed.body)
  // authored content: a form message (kept under the pseudonym)
  const form = (
    await call(app, tenant.adminToken, { method: 'POST', url: '/api/forms', payload: { name: 'Leave' } })
  ).json()
  await asPerson('POST', `/api/forms/${form.id}/messages`, { data: { days: 3 } })
  // a password reset asked from the person's address (password_reset_requests; the mail job)
  const reset = await app.inject({
    method: 'POST',
    url: '/api/auth/password-reset',
    payload: { tenant: tenant.slug, login: email },
    remoteAddress: ip,
  })
  assert.equal(reset.statusCode, 202, reset.body)
  // rows the mailer and sign-in write outside a request of the person
  await db
    .insertInto('outbound_messages')
    .values({
      tenant_id: tenant.id,
      channel: 'email',
      status: 'sent',
      user_id: null,
      recipient: email.toUpperCase(),
      subject: `Hello ${marker}-first`,
      body_text: `Dear ${marker}-first ${marker}-last`,
      body_html: `<p>Dear ${marker}-first</p>`,
      payload: JSON.stringify({ to: email }),
    })
    .execute()
  await db
    .insertInto('oidc_identities')
    .values({ tenant_id: tenant.id, user_id: person, issuer: 'https://idp.example', subject: `${marker}-subject` })
    .execute()

  // a personal-data export of the person, built (its archive is a file of the storage directory)
  const exported = await asPerson('POST', '/api/users/current/data-export')
  const exportId: number = exported.json().data.id
  await createDataExports(
    { db, config: testConfig(), log: pino({ level: 'silent' }) },
    createFileStorage(storageDir),
  ).build({ tenantId: tenant.id, exportId })
  const archives = path.join(storageDir, 'data-exports', String(tenant.id))
  assert.equal((await fs.readdir(archives)).length, 1)

  const needles = [marker, ip]
  const before = await tenantDump(tenant.id, tenant.slug)
  const seen = found(before, needles).map((line) => line.split(':')[0])
  // the scan sees the marked values where they were written (the test can fail)
  for (const table of [
    'users',
    'audit_log',
    'session_activity',
    'access_tokens',
    'push_subscriptions',
    'outbound_messages',
    'oidc_identities',
    'password_reset_requests',
    'login_failures',
  ])
    assert.ok(seen.includes(table), `the marker is in ${table} before the erasure`)
  assert.ok((await storageText(storageDir)).includes(picture))

  const erased = await call(app, tenant.adminToken, { method: 'POST', url: `/api/users/${person}/erasure` })

  assert.equal(erased.statusCode, 200, erased.body)
  const data = erased.json().data
  assert.match(data.full_name, /^Former employee [0-9a-f]{8}$/)
  assert.match(data.username, /^blackout-[0-9a-f]{16}$/)
  assert.equal(data.username.slice('blackout-'.length, 'blackout-'.length + 8), data.last_name)
  assert.ok(data.blacked_out_at)
  const afterDump = await tenantDump(tenant.id, tenant.slug)
  assert.deepEqual(found(afterDump, needles), [])
  assert.deepEqual(await fs.readdir(archives), [], 'the archive of the export is deleted')
  const files = await storageText(storageDir)
  assert.ok(
    !files.includes(marker) && !files.includes(picture),
    'no file of the person is left in the storage directory',
  )
  // authored content stays under the pseudonym; audit entries keep their action and actor id
  const {
    rows: [message],
  } = await sql<{
    user_id: string
  }>`select user_id from form_messages where tenant_id = ${tenant.id} and form_id = ${form.id}`.execute(db)
  assert.equal(Number(message.user_id), person)
  const audited = await db
    .selectFrom('audit_log')
    .select(['action', 'ip', 'user_agent'])
    .where('tenant_id', '=', tenant.id)
    .where('actor_id', '=', person)
    .execute()
  assert.ok(
    audited.some((a) => a.action === 'user.update'),
    JSON.stringify(audited),
  )
  assert.ok(audited.every((a) => a.ip === null && a.user_agent === null))
  // the old token is dead and the spec route refuses a second erasure
  assert.equal((await app.inject({ method: 'GET', url: '/api/users/current', headers: as(token) })).statusCode, 401)
  const again = await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/users/blackout/${person}` })
  assert.equal(again.statusCode, 422)
  assert.equal(again.json().code, 'already_blacked_out')
})

test('erasure needs users.administrate and never erases the requester', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const colleague = await given.user(db, tenant)
  const target = await given.user(db, tenant)

  const denied = await call(app, colleague.token, { method: 'POST', url: `/api/users/${target.id}/erasure` })
  const self = await call(app, tenant.adminToken, { method: 'POST', url: `/api/users/${tenant.adminId}/erasure` })
  const missing = await call(app, tenant.adminToken, { method: 'POST', url: '/api/users/999999999/erasure' })

  assert.equal(denied.statusCode, 403)
  assert.equal(self.statusCode, 403)
  assert.equal(self.json().code, 'cannot_black_out_self')
  assert.equal(missing.statusCode, 404)
  const row = await db
    .selectFrom('users')
    .select('blacked_out_at')
    .where('tenant_id', '=', tenant.id)
    .where('id', '=', target.id)
    .executeTakeFirstOrThrow()
  assert.equal(row.blacked_out_at, null)
})
