import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { Secret, TOTP } from 'otpauth'
import { buildTestApp, call, testConfig } from '../../../test/helpers/build-test-app.js'
import { given, TEST_PASSWORD, type GivenTenant } from '../../../test/helpers/given.js'
import { startSmtpServer } from '../../../test/helpers/smtp.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { flushSessionActivity, forgetNotedTokenUses } from '../../platform/auth/session-activity.js'
import { PASSWORD_RESET_JOB, passwordResetJob, type PasswordResetPayload } from './index.js'
import { createMailer } from '../notifications/delivery/mailer.js'
import pino from 'pino'

const db = testDb()
const silent = pino({ level: 'silent' })

async function login(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return (await buildTestApp()).inject({ method: 'POST', url: '/api/auth/login', payload: body, headers })
}
async function passwordLogin(tenant: GivenTenant, username: string, password = TEST_PASSWORD, agent = 'test-agent') {
  return login({ tenant: tenant.slug, username, password }, { 'user-agent': agent })
}
const auditActions = async (tenantId: number) =>
  (
    await db
      .selectFrom('audit_log')
      .select(['action', 'target_id', 'changes'])
      .where('tenant_id', '=', tenantId)
      .orderBy('id')
      .execute()
  ).map((r) => r.action)

// ---- sessions --------------------------------------------------------------------------------

test('sessions: own list with user agent, address and the current flag; last_used_at at most once a minute', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  await given.user(db, tenant, { username: 'sessions-anna' })
  const first = (await passwordLogin(tenant, 'sessions-anna', TEST_PASSWORD, 'Phone/1.0')).json()
  const second = (await passwordLogin(tenant, 'sessions-anna', TEST_PASSWORD, 'Laptop/2.0')).json()

  const listed = await call(app, second.access_token, { method: 'GET', url: '/api/users/current/sessions' })
  assert.equal(listed.statusCode, 200)
  const sessions = listed.json()
  // the token given.user issued, and the two logins
  assert.equal(sessions.length, 3)
  const laptop = sessions.find((s: { user_agent: string }) => s.user_agent === 'Laptop/2.0')
  const phone = sessions.find((s: { user_agent: string }) => s.user_agent === 'Phone/1.0')
  assert.ok(laptop && phone, JSON.stringify(sessions))
  assert.equal(laptop.current, true)
  assert.equal(phone.current, false)
  assert.equal(laptop.ip, '127.0.0.1')
  assert.deepEqual(Object.keys(laptop).sort(), [
    'created_at',
    'current',
    'device_name',
    'expires_at',
    'id',
    'ip',
    'last_used_at',
    'user_agent',
  ])

  // uses are noted in memory and written by a timer (flushed here), never by the request itself
  await flushSessionActivity(db)
  const lastUsed = async (tokenId: number) =>
    (
      await db
        .selectFrom('session_activity')
        .select(sql<string>`last_used_at::text`.as('at'))
        .where('tenant_id', '=', tenant.id)
        .where('token_id', '=', tokenId)
        .executeTakeFirstOrThrow()
    ).at
  const before = await lastUsed(laptop.id)
  assert.ok(before, 'the first use was written')
  for (let i = 0; i < 5; i++) await call(app, second.access_token, { method: 'GET', url: '/api/users/current' })
  await flushSessionActivity(db)
  assert.equal(await lastUsed(laptop.id), before, 'more uses within the minute write nothing')
  // another process (no memory of the use) writes nothing either within the minute: the SQL guard
  forgetNotedTokenUses()
  await call(app, second.access_token, { method: 'GET', url: '/api/users/current' })
  await flushSessionActivity(db)
  assert.equal(await lastUsed(laptop.id), before)
  // a minute later the next use is written (the stored time read first: Citus refuses a stable
  // function of a column, `last_used_at - interval`, in an UPDATE of a distributed table)
  const { rows: stored } = await sql<{ at: string }>`select last_used_at::text as at from session_activity
    where tenant_id = ${tenant.id} and token_id = ${laptop.id}`.execute(db)
  await db
    .updateTable('session_activity')
    .set({ last_used_at: sql<string>`${stored[0]!.at}::timestamptz - interval '2 minutes'` })
    .where('tenant_id', '=', tenant.id)
    .where('token_id', '=', laptop.id)
    .execute()
  forgetNotedTokenUses()
  await call(app, second.access_token, { method: 'GET', url: '/api/users/current' })
  await flushSessionActivity(db)
  assert.ok((await lastUsed(laptop.id)) > before)

  // ending one's own other session
  const ended = await call(app, second.access_token, {
    method: 'DELETE',
    url: `/api/users/current/sessions/${phone.id}`,
  })
  assert.equal(ended.statusCode, 204)
  assert.equal((await call(app, first.access_token, { method: 'GET', url: '/api/users/current' })).statusCode, 401)
  assert.equal(
    (await call(app, second.access_token, { method: 'DELETE', url: `/api/users/current/sessions/${phone.id}` }))
      .statusCode,
    404,
    'an ended session is gone',
  )
  const other = await given.user(db, tenant)
  const foreign = await call(app, other.token, {
    method: 'DELETE',
    url: `/api/users/current/sessions/${laptop.id}`,
  })
  assert.equal(foreign.statusCode, 404, "another user's session is not one's own")
  assert.ok((await auditActions(tenant.id)).includes('session.revoke'))
})

test('sessions: administrators list and end the sessions of a user; others get 403', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant, { username: 'sessions-ben' })
  const employee = await given.user(db, tenant)
  const listed = await call(app, tenant.adminToken, { method: 'GET', url: `/api/users/${user.id}/sessions` })
  assert.equal(listed.statusCode, 200)
  assert.equal(listed.json().length, 1)
  assert.equal(listed.json()[0].current, false)
  const refused = await call(app, employee.token, { method: 'GET', url: `/api/users/${user.id}/sessions` })
  assert.equal(refused.statusCode, 403)
  assert.equal(
    (
      await call(app, employee.token, {
        method: 'DELETE',
        url: `/api/users/${user.id}/sessions/${listed.json()[0].id}`,
      })
    ).statusCode,
    403,
  )
  const ended = await call(app, tenant.adminToken, {
    method: 'DELETE',
    url: `/api/users/${user.id}/sessions/${listed.json()[0].id}`,
  })
  assert.equal(ended.statusCode, 204)
  assert.equal((await call(app, user.token, { method: 'GET', url: '/api/users/current' })).statusCode, 401)
  assert.equal(
    (await call(app, tenant.adminToken, { method: 'GET', url: `/api/users/999999999/sessions` })).statusCode,
    404,
  )
  const record = await db
    .selectFrom('audit_log')
    .select(['actor_id', 'target_id', 'changes'])
    .where('tenant_id', '=', tenant.id)
    .where('action', '=', 'session.revoke')
    .executeTakeFirstOrThrow()
  assert.equal(record.actor_id, tenant.adminId)
  assert.equal(record.target_id, String(listed.json()[0].id))
})

// ---- password reset --------------------------------------------------------------------------

async function queuedResets(tenantId: number): Promise<PasswordResetPayload[]> {
  const { rows } = await sql<{ payload: PasswordResetPayload }>`
    select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = ${PASSWORD_RESET_JOB} and (j.payload->>'tenantId')::bigint = ${tenantId} order by j.id`.execute(
    db,
  )
  return rows.map((r) => r.payload)
}
const resetRequest = async (body: Record<string, unknown>, remoteAddress = '127.0.0.1') =>
  (await buildTestApp()).inject({ method: 'POST', url: '/api/auth/password-reset', payload: body, remoteAddress })

test('password reset: the emailed link sets a new password once, ends every session, and follows the tenant rules', async (t) => {
  const smtp = await startSmtpServer()
  t.after(smtp.close)
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant, { username: 'reset-anna', email: 'Anna.Reset@example.com' })

  const accepted = await resetRequest({ tenant: tenant.slug, login: 'anna.reset@example.com' })
  assert.equal(accepted.statusCode, 202)
  const [payload] = await queuedResets(tenant.id)
  assert.ok(payload, 'a job was queued')
  const config = testConfig({ SMTP_URL: smtp.url })
  const job = passwordResetJob({
    db,
    appUrl: config.appUrl,
    mailer: createMailer({ smtpUrl: smtp.url, appUrl: config.appUrl, log: silent }),
    log: silent,
  })
  await job(payload)
  assert.equal(smtp.received.length, 1)
  const mail = smtp.received[0]!.replace(/=\r?\n/g, '').replace(/=3D/g, '=')
  assert.match(mail, /^To: Anna\.Reset@example\.com\r?$/m)
  const token = decodeURIComponent(/http:\/\/app\.test\/reset-password\?token=([A-Za-z0-9%._-]+)/.exec(mail)![1]!)
  const stored = await db
    .selectFrom('auth_tickets')
    .select(['token_hash', 'expires_at', sql<number>`extract(epoch from expires_at - created_at)::int`.as('ttl')])
    .where('tenant_id', '=', tenant.id)
    .where('kind', '=', 'password_reset')
    .executeTakeFirstOrThrow()
  assert.equal(stored.ttl, 30 * 60)
  assert.ok(!stored.token_hash.toString('utf8').includes(token), 'stored hashed')

  const short = await app.inject({
    method: 'POST',
    url: '/api/auth/password-reset/confirm',
    payload: { token, password: 'short' },
  })
  assert.equal(short.statusCode, 422)
  assert.deepEqual(Object.keys(short.json().errors), ['password'])

  const done = await app.inject({
    method: 'POST',
    url: '/api/auth/password-reset/confirm',
    payload: { token, password: 'a-brand-new-password' },
  })
  assert.equal(done.statusCode, 204)
  assert.equal((await call(app, user.token, { method: 'GET', url: '/api/users/current' })).statusCode, 401)
  assert.equal((await passwordLogin(tenant, 'reset-anna')).statusCode, 401)
  assert.equal((await passwordLogin(tenant, 'reset-anna', 'a-brand-new-password')).statusCode, 200)
  const again = await app.inject({
    method: 'POST',
    url: '/api/auth/password-reset/confirm',
    payload: { token, password: 'yet-another-password' },
  })
  assert.equal(again.statusCode, 422)
  assert.equal(again.json().code, 'invalid_reset_token')
  const actions = await auditActions(tenant.id)
  assert.ok(actions.includes('auth.password_reset_requested') && actions.includes('auth.password_reset'))
  const recorded = JSON.stringify(
    await db.selectFrom('audit_log').selectAll().where('tenant_id', '=', tenant.id).execute(),
  )
  assert.ok(!recorded.includes(token) && !recorded.includes('a-brand-new-password'), 'no secret in the audit log')

  // per account: at most 3 emails per 15 minutes, whatever is asked
  for (let i = 0; i < 4; i++) await job(payload)
  assert.equal(smtp.received.length, 3)
})

test('password reset: no enumeration: the same answer, and no measurable time difference, over 200 tries each', async () => {
  const tenant = await given.tenant(db)
  await given.user(db, tenant, { username: 'enum-real', email: 'real@example.com' })
  const durations = { existing: [] as number[], missing: [] as number[] }
  const bodies = new Set<string>()
  // interleaved, each from its own address (the per-address throttle stays out of it)
  for (let i = 0; i < 400; i++) {
    const kind = i % 2 === 0 ? 'existing' : 'missing'
    const started = process.hrtime.bigint()
    const res = await resetRequest(
      { tenant: tenant.slug, login: kind === 'existing' ? 'enum-real' : 'enum-nobody' },
      `10.9.${i >> 8}.${i & 255}`,
    )
    durations[kind].push(Number(process.hrtime.bigint() - started) / 1e6)
    assert.equal(res.statusCode, 202)
    bodies.add(res.body)
  }
  assert.equal(bodies.size, 1, 'one body for both')
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!
  const [a, b] = [median(durations.existing), median(durations.missing)]
  assert.ok(Math.abs(a - b) < Math.max(1, 0.25 * Math.min(a, b)), `median ${a.toFixed(2)} ms vs ${b.toFixed(2)} ms`)
  assert.equal((await queuedResets(tenant.id)).length, 400, 'every request queues the same job')
})

test('password reset: throttled per client address', async () => {
  const tenant = await given.tenant(db)
  for (let i = 0; i < 10; i++)
    assert.equal((await resetRequest({ tenant: tenant.slug, login: `x${i}` }, '10.20.30.40')).statusCode, 202)
  const throttled = await resetRequest({ tenant: tenant.slug, login: 'x' }, '10.20.30.40')
  assert.equal(throttled.statusCode, 429)
  assert.ok(Number(throttled.headers['retry-after']) > 0)
  assert.equal((await resetRequest({ tenant: tenant.slug, login: 'x' }, '10.20.30.41')).statusCode, 202)
})

// ---- TOTP ------------------------------------------------------------------------------------

const codeAt = (secret: string, offsetSteps = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: Date.now() + offsetSteps * 30_000,
  })

async function enrolled(tenant: GivenTenant, username: string) {
  const app = await buildTestApp()
  const user = await given.user(db, tenant, { username })
  const started = await call(app, user.token, {
    method: 'POST',
    url: '/api/users/current/totp',
    payload: { password: TEST_PASSWORD },
  })
  assert.equal(started.statusCode, 200, started.body)
  const { secret, otpauth_url } = started.json()
  assert.match(otpauth_url, /^otpauth:\/\/totp\//)
  const confirmed = await call(app, user.token, {
    method: 'POST',
    url: '/api/users/current/totp/confirm',
    payload: { code: codeAt(secret) },
  })
  assert.equal(confirmed.statusCode, 200, confirmed.body)
  return { user, secret: String(secret), recoveryCodes: confirmed.json().recovery_codes as string[] }
}

test('TOTP: enrollment, then a password login needs the second factor; a code is accepted once', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant, { username: 'totp-anna' })
  const started = (
    await call(app, user.token, {
      method: 'POST',
      url: '/api/users/current/totp',
      payload: { password: TEST_PASSWORD },
    })
  ).json()
  const wrong = await call(app, user.token, {
    method: 'POST',
    url: '/api/users/current/totp/confirm',
    payload: { code: codeAt(started.secret, 10) },
  })
  assert.equal(wrong.statusCode, 422)
  assert.equal(wrong.json().code, 'invalid_totp_code')
  const confirmed = await call(app, user.token, {
    method: 'POST',
    url: '/api/users/current/totp/confirm',
    payload: { code: codeAt(started.secret) },
  })
  assert.equal(confirmed.statusCode, 200)
  const codes: string[] = confirmed.json().recovery_codes
  assert.equal(codes.length, 10)
  assert.equal(new Set(codes).size, 10)
  const stored = await db
    .selectFrom('user_totp')
    .select(['secret', 'recovery_codes'])
    .where('tenant_id', '=', tenant.id)
    .where('user_id', '=', user.id)
    .executeTakeFirstOrThrow()
  assert.ok(stored.secret.startsWith('enc:v1.'), 'the secret is sealed at rest')
  assert.ok(!stored.recovery_codes.includes(codes[0]!), 'recovery codes are stored hashed')

  const first = await passwordLogin(tenant, 'totp-anna')
  assert.equal(first.statusCode, 401)
  assert.equal(first.json().code, 'mfa_required')
  const mfaToken = first.json().mfa_token
  assert.match(mfaToken, /^[0-9]+\.[A-Za-z0-9_-]{43}$/)
  // the code the enrollment used is spent: the next step's code is accepted (window ±1)
  const next = codeAt(started.secret, 1)
  const done = await login({ mfa_token: mfaToken, totp: next })
  assert.equal(done.statusCode, 200, done.body)
  assert.ok(done.json().access_token)
  assert.equal((await login({ mfa_token: mfaToken, totp: next })).json().code, 'invalid_mfa_token', 'one use')

  const second = (await passwordLogin(tenant, 'totp-anna')).json().mfa_token
  const replay = await login({ mfa_token: second, totp: next })
  assert.equal(replay.statusCode, 401)
  assert.equal(replay.json().code, 'invalid_mfa_code', 'a code is accepted once')
  const recovered = await login({ mfa_token: second, recovery_code: codes[0]!.toUpperCase() })
  assert.equal(recovered.statusCode, 200, 'a recovery code works (case and dash insensitive)')
  const third = (await passwordLogin(tenant, 'totp-anna')).json().mfa_token
  assert.equal((await login({ mfa_token: third, recovery_code: codes[0] })).statusCode, 401, 'once')

  const actions = await auditActions(tenant.id)
  for (const action of ['totp.enroll', 'totp.enable', 'auth.login', 'auth.login_failed'])
    assert.ok(actions.includes(action), action)
  const recorded = JSON.stringify(
    await db.selectFrom('audit_log').selectAll().where('tenant_id', '=', tenant.id).execute(),
  )
  assert.ok(!recorded.includes(started.secret) && !recorded.includes(codes[1]!) && !recorded.includes(next))
})

test('TOTP: five wrong codes lock the factor for 15 minutes', async () => {
  const tenant = await given.tenant(db)
  const { secret } = await enrolled(tenant, 'totp-locked')
  const mfaToken = (await passwordLogin(tenant, 'totp-locked')).json().mfa_token
  for (let i = 0; i < 5; i++) {
    const res = await login({ mfa_token: mfaToken, totp: '000000' === codeAt(secret, 1) ? '111111' : '000000' })
    assert.equal(res.statusCode, 401)
  }
  const locked = await login({ mfa_token: mfaToken, totp: codeAt(secret, 1) })
  assert.equal(locked.statusCode, 429)
  assert.equal(locked.json().code, 'mfa_locked')
  const retry = Number(locked.headers['retry-after'])
  assert.ok(retry > 14 * 60 && retry <= 15 * 60, String(retry))
})

test('TOTP: turning it off needs a code; an administrator can reset it (audited)', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const anna = await enrolled(tenant, 'totp-off')
  const refused = await call(app, anna.user.token, {
    method: 'DELETE',
    url: '/api/users/current/totp',
    payload: { code: '000000' === codeAt(anna.secret, 1) ? '111111' : '000000' },
  })
  assert.equal(refused.statusCode, 422)
  const off = await call(app, anna.user.token, {
    method: 'DELETE',
    url: '/api/users/current/totp',
    payload: { code: codeAt(anna.secret, 1) },
  })
  assert.equal(off.statusCode, 204)
  assert.equal((await passwordLogin(tenant, 'totp-off')).statusCode, 200, 'password alone again')

  const ben = await enrolled(tenant, 'totp-reset')
  const employee = await given.user(db, tenant)
  assert.equal(
    (await call(app, employee.token, { method: 'DELETE', url: `/api/users/${ben.user.id}/totp` })).statusCode,
    403,
  )
  const reset = await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/users/${ben.user.id}/totp` })
  assert.equal(reset.statusCode, 204)
  assert.equal((await passwordLogin(tenant, 'totp-reset')).statusCode, 200)
  const record = await db
    .selectFrom('audit_log')
    .select(['actor_id', 'target_id'])
    .where('tenant_id', '=', tenant.id)
    .where('action', '=', 'totp.reset')
    .executeTakeFirstOrThrow()
  assert.deepEqual(record, { actor_id: tenant.adminId, target_id: String(ben.user.id) })
})

test('TOTP: a role requiring MFA gives its users without TOTP a token that can only enroll', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const roleId = await given.role(db, tenant, ['users.view'])
  const updated = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/roles/${roleId}`,
    payload: { requires_mfa: true },
  })
  assert.equal(updated.statusCode, 200, updated.body)
  assert.equal(updated.json().requires_mfa, true)
  await given.user(db, tenant, { username: 'mfa-required', roleId })

  const signedIn = await passwordLogin(tenant, 'mfa-required')
  assert.equal(signedIn.statusCode, 200)
  assert.equal(signedIn.json().mfa_enrollment_required, true)
  const token = signedIn.json().access_token
  const blocked = await call(app, token, { method: 'GET', url: '/api/users' })
  assert.equal(blocked.statusCode, 403)
  assert.equal(blocked.json().code, 'mfa_enrollment_required')
  const started = await call(app, token, {
    method: 'POST',
    url: '/api/users/current/totp',
    payload: { password: TEST_PASSWORD },
  })
  assert.equal(started.statusCode, 200)
  const confirmed = await call(app, token, {
    method: 'POST',
    url: '/api/users/current/totp/confirm',
    payload: { code: codeAt(started.json().secret) },
  })
  assert.equal(confirmed.statusCode, 200)
  assert.equal((await call(app, token, { method: 'GET', url: '/api/users' })).statusCode, 200, 'a full token now')
  const next = await passwordLogin(tenant, 'mfa-required')
  assert.equal(next.json().code, 'mfa_required')
})
