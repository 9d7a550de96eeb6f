/**
 * The sign-in holes of issue 39, each as an attack over HTTP: SSO account takeover, throttles that a
 * burst walked through, sessions that came back, login CSRF (server side; the browser side is in
 * web/test/app.browser.ts), the TOTP escalation, enrollment with a stolen token, MFA after SSO.
 * The concurrency tests count how many attempts were checked: every checked wrong password or code is
 * an `auth.login_failed` audit record with its reason; a refused (throttled) attempt is none.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { Secret, TOTP } from 'otpauth'
import { buildApp } from '../../app.js'
import { UNUSABLE_PASSWORD_HASH } from '../../platform/auth/passwords.js'
import { deriveActiveForAllTenants } from '../users/index.js'
import { call, instrumentTestApp, testConfig } from '../../../test/helpers/build-test-app.js'
import { given, TEST_PASSWORD, type GivenTenant } from '../../../test/helpers/given.js'
import { signInAt, startOidcProvider, type TestProvider } from '../../../test/helpers/oidc-provider.js'
import { configureOidc, OIDC_CALLBACK, SSO_APP_REDIRECT, ssoCallback } from '../../../test/helpers/oidc-sign-in.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { newUser, PATCH_OP, scim, scimToken } from '../../../test/helpers/scim-support.js'

const db = testDb()
let app: FastifyInstance
let provider: TestProvider

before(async () => {
  provider = await startOidcProvider(OIDC_CALLBACK)
  app = await instrumentTestApp(await buildApp({ config: testConfig({ OIDC_ALLOW_PRIVATE_NETWORKS: 'true' }), db }))
})
after(async () => {
  await app.close()
  await provider.close()
})

const login = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/auth/login', payload })
const passwordLogin = (tenant: GivenTenant, username: string, password = TEST_PASSWORD) =>
  login({ tenant: tenant.slug, username, password })

const codeAt = (secret: string, offsetSteps = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: Date.now() + offsetSteps * 30_000,
  })
const wrongCode = (secret: string) => {
  const valid = new Set([-1, 0, 1].map((o) => codeAt(secret, o)))
  for (let i = 0; ; i++) {
    const code = String(100000 + i)
    if (!valid.has(code)) return code
  }
}

/** Failed sign-ins of the tenant whose reason is one of `reasons` (each is a check that was made). */
async function checked(tenantId: number, ...reasons: string[]): Promise<number> {
  const rows = await db
    .selectFrom('audit_log')
    .select('changes')
    .where('tenant_id', '=', tenantId)
    .where('action', '=', 'auth.login_failed')
    .execute()
  return rows.filter((r) => reasons.includes(String((r.changes as { reason?: unknown } | null)?.reason))).length
}

async function enrollTotp(token: string): Promise<string> {
  const started = await call(app, token, {
    method: 'POST',
    url: '/api/users/current/totp',
    payload: { password: TEST_PASSWORD },
  })
  assert.equal(started.statusCode, 200, started.body)
  const secret = String(started.json().secret)
  const confirmed = await call(app, token, {
    method: 'POST',
    url: '/api/users/current/totp/confirm',
    payload: { code: codeAt(secret) },
  })
  assert.equal(confirmed.statusCode, 200, confirmed.body)
  return secret
}

// ---- single sign-on ----------------------------------------------------------------------------

/** The login code of a callback's redirect (in the fragment; the query string on the old code). */
function loginCodeOf(location: string): string | null {
  const url = new URL(location)
  return new URLSearchParams(url.hash.slice(1)).get('login_code') ?? url.searchParams.get('login_code')
}

async function ssoLogin(tenant: GivenTenant, sub: string) {
  const { response } = await ssoCallback(app, tenant, sub)
  if (response.statusCode !== 302) return response
  return login({ login_code: loginCodeOf(String(response.headers.location)) })
}

const linkOf = (tenantId: number, sub: string) =>
  db
    .selectFrom('oidc_identities')
    .select('user_id')
    .where('tenant_id', '=', tenantId)
    .where('subject', '=', sub)
    .executeTakeFirst()

test('finding 1: an IdP account named like the administrator does not sign in as them, nor links', async () => {
  const tenant = await given.tenant(db)
  await configureOidc(app, provider, tenant)
  provider.accounts.set('sub-evil-admin', { sub: 'sub-evil-admin', preferred_username: 'admin' })
  const taken = await ssoLogin(tenant, 'sub-evil-admin')
  assert.equal(taken.statusCode, 403, taken.body)
  assert.equal(taken.json().code, 'sso_link_required')
  assert.equal(await linkOf(tenant.id, 'sub-evil-admin'), undefined)
})

test('finding 1: an unverified email never links; a verified one only where the tenant allows it', async () => {
  const tenant = await given.tenant(db)
  const boss = await given.user(db, tenant, { username: 'boss', email: 'boss@corp.test' })
  await configureOidc(app, provider, tenant, { username_claim: 'email' })
  provider.accounts.set('sub-unverified', {
    sub: 'sub-unverified',
    email: 'boss@corp.test',
    email_verified: false,
  })
  const unverified = await ssoLogin(tenant, 'sub-unverified')
  assert.equal(unverified.statusCode, 403, unverified.body)
  assert.equal(unverified.json().code, 'sso_link_required')

  provider.accounts.set('sub-verified', { sub: 'sub-verified', email: 'Boss@corp.test', email_verified: true })
  const notAllowed = await ssoLogin(tenant, 'sub-verified')
  assert.equal(notAllowed.statusCode, 403, 'verified, but the tenant does not link by email')
  assert.equal(await linkOf(tenant.id, 'sub-verified'), undefined)

  await configureOidc(app, provider, tenant, { username_claim: 'email', link_by_verified_email: true })
  assert.equal((await ssoLogin(tenant, 'sub-unverified')).statusCode, 403, 'still not unverified')
  const linked = await ssoLogin(tenant, 'sub-verified')
  assert.equal(linked.statusCode, 200, linked.body)
  assert.equal(linked.json().user.id, boss.id)
  assert.deepEqual(await linkOf(tenant.id, 'sub-verified'), { user_id: boss.id })
})

test('finding 1: linking from a signed-in session (password) and by an administrator holding the permissions', async () => {
  const tenant = await given.tenant(db)
  await configureOidc(app, provider, tenant)
  const anna = await given.user(db, tenant, { username: 'anna.link' })
  provider.accounts.set('sub-anna-link', { sub: 'sub-anna-link', preferred_username: 'anna.link' })

  const wrong = await call(app, anna.token, {
    method: 'POST',
    url: '/api/users/current/oidc-link',
    payload: { password: 'wrong-password', redirect_uri: SSO_APP_REDIRECT },
  })
  assert.equal(wrong.statusCode, 422)
  assert.deepEqual(Object.keys(wrong.json().errors), ['password'])
  const started = await call(app, anna.token, {
    method: 'POST',
    url: '/api/users/current/oidc-link',
    payload: { password: TEST_PASSWORD, redirect_uri: SSO_APP_REDIRECT },
  })
  assert.equal(started.statusCode, 200, started.body)
  const cookie = String(started.headers['set-cookie']).split(';')[0]!
  const back = await signInAt(started.json().authorization_url, 'sub-anna-link', OIDC_CALLBACK)
  const done = await app.inject({ method: 'GET', url: `${back.pathname}${back.search}`, headers: { cookie } })
  assert.equal(done.statusCode, 302, done.body)
  assert.deepEqual(await linkOf(tenant.id, 'sub-anna-link'), { user_id: anna.id })
  assert.equal((await ssoLogin(tenant, 'sub-anna-link')).json().user.id, anna.id, 'the link signs her in')

  // an administrator: users.administrate, and every permission of the user linked
  const ben = await given.user(db, tenant, { username: 'ben.link' })
  const helpdeskRole = await given.role(db, tenant, ['users.administrate', 'users.view'])
  const helpdesk = await given.user(db, tenant, { roleId: helpdeskRole })
  const admin = await db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .where('username', '=', 'admin')
    .executeTakeFirstOrThrow()
  const beyond = await call(app, helpdesk.token, {
    method: 'PUT',
    url: `/api/users/${admin.id}/oidc-identity`,
    payload: { subject: 'sub-helpdesk-own' },
  })
  assert.equal(beyond.statusCode, 403)
  assert.equal(beyond.json().code, 'exceeds_own_permissions')
  assert.deepEqual(Object.keys(beyond.json().errors), ['subject'])
  const linked = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/users/${ben.id}/oidc-identity`,
    payload: { subject: 'sub-ben-link' },
  })
  assert.equal(linked.statusCode, 204, linked.body)
  assert.deepEqual(await linkOf(tenant.id, 'sub-ben-link'), { user_id: ben.id })
})

test('finding 10: provisioning follows the username rules of POST /api/users (no HTML username)', async () => {
  const tenant = await given.tenant(db)
  await configureOidc(app, provider, tenant, { provisioning: 'create', default_role_id: tenant.employeeRoleId })
  provider.accounts.set('sub-html', { sub: 'sub-html', preferred_username: '<img src=x onerror=alert(1)>' })
  const refused = await ssoLogin(tenant, 'sub-html')
  assert.equal(refused.statusCode, 403, refused.body)
  assert.equal(refused.json().code, 'sso_provisioning_refused')
  const stored = await db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .where('username', 'like', '%<%')
    .execute()
  assert.equal(stored.length, 0)
})

test('finding 8: after SSO a user with TOTP is asked for it, unless the ID token shows MFA (amr)', async () => {
  const tenant = await given.tenant(db)
  await configureOidc(app, provider, tenant)
  const carla = await given.user(db, tenant, { username: 'carla.mfa' })
  const secret = await enrollTotp(carla.token)
  await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/users/${carla.id}/oidc-identity`,
    payload: { subject: 'sub-carla' },
  }).then((r) => assert.equal(r.statusCode, 204, r.body))
  provider.accounts.set('sub-carla', { sub: 'sub-carla', amr: ['pwd'] })
  const asked = await ssoLogin(tenant, 'sub-carla')
  assert.equal(asked.statusCode, 401, asked.body)
  assert.equal(asked.json().code, 'mfa_required')
  const done = await login({ mfa_token: asked.json().mfa_token, totp: codeAt(secret, 1) })
  assert.equal(done.statusCode, 200, done.body)

  provider.accounts.set('sub-carla', { sub: 'sub-carla', amr: ['pwd', 'mfa'] })
  const trusted = await ssoLogin(tenant, 'sub-carla')
  assert.equal(trusted.statusCode, 200, `amr mfa counts: ${trusted.body}`)

  // a role requiring MFA, no TOTP, no MFA at the provider: an enrollment-only token
  const roleId = await given.role(db, tenant, ['users.view'])
  await call(app, tenant.adminToken, { method: 'PUT', url: `/api/roles/${roleId}`, payload: { requires_mfa: true } })
  const dora = await given.user(db, tenant, { username: 'dora.mfa', roleId })
  await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/users/${dora.id}/oidc-identity`,
    payload: { subject: 'sub-dora' },
  })
  provider.accounts.set('sub-dora', { sub: 'sub-dora' })
  const enrolOnly = await ssoLogin(tenant, 'sub-dora')
  assert.equal(enrolOnly.statusCode, 200, enrolOnly.body)
  assert.equal(enrolOnly.json().mfa_enrollment_required, true)
})

test('finding 5: the callback refuses a browser that did not start the sign-in; the code travels in the fragment', async () => {
  const tenant = await given.tenant(db)
  await configureOidc(app, provider, tenant)
  const eve = await given.user(db, tenant, { username: 'eve.csrf' })
  await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/users/${eve.id}/oidc-identity`,
    payload: { subject: 'sub-eve' },
  })
  provider.accounts.set('sub-eve', { sub: 'sub-eve' })
  const started = await app.inject({
    method: 'GET',
    url: `/api/auth/oidc/${tenant.slug}/start?redirect_uri=${encodeURIComponent(SSO_APP_REDIRECT)}`,
  })
  const setCookie = String(started.headers['set-cookie'] ?? '')
  assert.match(setCookie, /HttpOnly/i)
  assert.match(setCookie, /SameSite=Lax/i)
  assert.match(setCookie, /Max-Age=\d+/i)
  // the attacker completes the provider's part and hands the callback URL to a victim's browser (no cookie)
  const back = await signInAt(String(started.headers.location), 'sub-eve', OIDC_CALLBACK)
  const victim = await app.inject({ method: 'GET', url: `${back.pathname}${back.search}` })
  assert.equal(victim.statusCode, 400, victim.body)
  assert.equal(victim.json().code, 'oidc_invalid_state')

  const { response } = await ssoCallback(app, tenant, 'sub-eve')
  const location = new URL(String(response.headers.location))
  assert.equal(location.searchParams.get('login_code'), null, 'not in the query string')
  assert.ok(new URLSearchParams(location.hash.slice(1)).get('login_code'))
})

// ---- throttles under concurrency ---------------------------------------------------------------

test('finding 2: 100 concurrent wrong passwords: at most 10 are checked, and the right one in the burst is refused', async () => {
  const tenant = await given.tenant(db)
  await given.user(db, tenant, { username: 'burst.target' })
  // 99 wrong passwords at once; the right one is sent inside the burst once ten answers are in
  let answered = 0
  let release: () => void = () => undefined
  const tenAnswered = new Promise<void>((resolve) => (release = resolve))
  const wrong = Array.from({ length: 99 }, (_, i) =>
    passwordLogin(tenant, 'burst.target', `wrong-${i}`).then((res) => {
      if (++answered === 10) release()
      return res
    }),
  )
  const right = tenAnswered.then(() => passwordLogin(tenant, 'burst.target', TEST_PASSWORD))
  const attempts = [...wrong, right]
  const answers = await Promise.all(attempts)
  const checkedWrong = await checked(tenant.id, 'wrong_password')
  assert.ok(checkedWrong <= 10, `${checkedWrong} wrong passwords were checked`)
  assert.equal(answers.filter((a) => a.statusCode === 200).length, 0, 'the right password inside the burst')
  // (on a loaded machine a few may time out waiting for a pool connection: they are not checked either)
  assert.ok(answers.filter((a) => a.statusCode === 401).length <= 10)
  assert.equal((await right).statusCode, 429, 'the right password after the limit')
  assert.equal((await passwordLogin(tenant, 'burst.target')).statusCode, 429, 'locked for the window')
})

test('finding 3: 100 concurrent wrong TOTP codes on one mfa_token: at most 5 are checked, a right one is refused', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant, { username: 'burst.totp' })
  const secret = await enrollTotp(user.token)
  const mfaToken = (await passwordLogin(tenant, 'burst.totp')).json().mfa_token
  assert.ok(mfaToken)
  const wrong = wrongCode(secret)
  const answers = await Promise.all(
    Array.from({ length: 100 }, (_, i) => login({ mfa_token: mfaToken, totp: i === 50 ? codeAt(secret, 1) : wrong })),
  )
  const checkedWrong = await checked(tenant.id, 'wrong_totp')
  assert.ok(checkedWrong <= 5, `${checkedWrong} wrong codes were checked`)
  assert.equal(answers[50]!.statusCode, 429, `the right code after the lock: ${answers[50]!.body}`)
  assert.equal(answers.filter((a) => a.statusCode === 200).length, 0)
  const after = await login({ mfa_token: mfaToken, totp: codeAt(secret, 1) })
  assert.equal(after.statusCode, 429, 'locked: a correct code is refused too')
})

test('finding 3: 100 concurrent wrong recovery codes: at most 5 are checked', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant, { username: 'burst.recovery' })
  await enrollTotp(user.token)
  const mfaToken = (await passwordLogin(tenant, 'burst.recovery')).json().mfa_token
  await Promise.all(
    Array.from({ length: 100 }, (_, i) =>
      login({ mfa_token: mfaToken, recovery_code: `aaaaa-${String(i).padStart(5, '0')}` }),
    ),
  )
  const checkedWrong = await checked(tenant.id, 'wrong_recovery_code')
  assert.ok(checkedWrong <= 5, `${checkedWrong} recovery codes were checked`)
})

test('password reset requests: 100 concurrent from one address: at most 10 are taken', async () => {
  const tenant = await given.tenant(db)
  const answers = await Promise.all(
    Array.from({ length: 100 }, () =>
      app.inject({ method: 'POST', url: '/api/auth/password-reset', payload: { tenant: tenant.slug, login: 'admin' } }),
    ),
  )
  const taken = await db.selectFrom('password_reset_requests').select('id').where('tenant_id', '=', tenant.id).execute()
  assert.ok(taken.length <= 10, `${taken.length} requests were taken`)
  assert.equal(answers.filter((a) => a.statusCode === 202).length, taken.length)
  assert.equal(answers.filter((a) => a.statusCode === 429).length, 100 - taken.length)
})

test('finding 10: an account without a usable password costs a password check like an unknown one', async () => {
  const tenant = await given.tenant(db)
  const names = Array.from({ length: 8 }, (_, i) => `nopass-${i}`)
  for (const username of names) await given.user(db, tenant, { username, password_hash: UNUSABLE_PASSWORD_HASH })
  const time = async (username: string) => {
    const start = process.hrtime.bigint()
    const res = await passwordLogin(tenant, username, 'some-password')
    assert.equal(res.statusCode, 401)
    return Number(process.hrtime.bigint() - start) / 1e6
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const passwordless: number[] = []
  const unknown: number[] = []
  for (let i = 0; i < names.length; i++) {
    passwordless.push(await time(names[i]!))
    unknown.push(await time(`unknown-${i}`))
  }
  const ratio = median(passwordless) / median(unknown)
  assert.ok(ratio > 0.6, `password-less ${median(passwordless)} ms, unknown ${median(unknown)} ms`)
})

// ---- sessions end for good ---------------------------------------------------------------------

const works = async (token: string) =>
  (await call(app, token, { method: 'GET', url: '/api/users/current' })).statusCode === 200

test('finding 4: deactivation ends every session; reactivation brings none back', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const put = (payload: Record<string, unknown>) =>
    call(app, tenant.adminToken, { method: 'PUT', url: `/api/users/${user.id}`, payload })
  assert.ok(await works(user.token))
  assert.equal((await put({ active: false })).statusCode, 200)
  assert.equal((await put({ active: true })).statusCode, 200)
  assert.equal(await works(user.token), false, 'the old token stays dead')
  const fresh = await passwordLogin(tenant, user.username)
  assert.equal(fresh.statusCode, 200)
  assert.ok(await works(fresh.json().access_token), 'a new sign-in works')
})

test('finding 4: a leaving_date that passes ends the sessions (PUT and the nightly job); reactivation brings none back', async () => {
  const tenant = await given.tenant(db)
  const viaPut = await given.user(db, tenant, { active_derived: true })
  const put = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/users/${viaPut.id}`,
    payload: { leaving_date: '2001-01-01' },
  })
  assert.equal(put.statusCode, 200, put.body)
  await call(app, tenant.adminToken, { method: 'PUT', url: `/api/users/${viaPut.id}`, payload: { active: true } })
  assert.equal(await works(viaPut.token), false)

  const viaJob = await given.user(db, tenant, { active_derived: true })
  assert.ok(await works(viaJob.token))
  await db
    .updateTable('users')
    .set({ leaving_date: sql<string>`current_date - 1` })
    .where('tenant_id', '=', tenant.id)
    .where('id', '=', viaJob.id)
    .execute()
  await deriveActiveForAllTenants({ db })
  await call(app, tenant.adminToken, { method: 'PUT', url: `/api/users/${viaJob.id}`, payload: { active: true } })
  assert.equal(await works(viaJob.token), false)
})

test('finding 8: a role starting to require MFA downgrades its sessions to enrollment-only', async () => {
  const tenant = await given.tenant(db)
  const roleId = await given.role(db, tenant, ['users.view'])
  const user = await given.user(db, tenant, { roleId })
  assert.equal((await call(app, user.token, { method: 'GET', url: '/api/users' })).statusCode, 200)
  await call(app, tenant.adminToken, { method: 'PUT', url: `/api/roles/${roleId}`, payload: { requires_mfa: true } })
  const blocked = await call(app, user.token, { method: 'GET', url: '/api/users' })
  assert.equal(blocked.statusCode, 403)
  assert.equal(blocked.json().code, 'mfa_enrollment_required')

  // moved into such a role: the same
  const other = await given.user(db, tenant)
  await call(app, tenant.adminToken, { method: 'PUT', url: `/api/users/${other.id}`, payload: { role_id: roleId } })
  assert.equal(
    (await call(app, other.token, { method: 'GET', url: '/api/users' })).json().code,
    'mfa_enrollment_required',
  )
})

// ---- the second factor -------------------------------------------------------------------------

test("finding 6: a user administrator without * cannot remove a * administrator's TOTP", async () => {
  const tenant = await given.tenant(db)
  const boss = await given.user(db, tenant, { roleId: tenant.adminRoleId })
  await enrollTotp(boss.token)
  const helpdeskRole = await given.role(db, tenant, ['users.administrate', 'users.view'])
  const helpdesk = await given.user(db, tenant, { roleId: helpdeskRole })
  const refused = await call(app, helpdesk.token, { method: 'DELETE', url: `/api/users/${boss.id}/totp` })
  assert.equal(refused.statusCode, 403, refused.body)
  assert.equal(refused.json().code, 'exceeds_own_permissions')
  assert.deepEqual(Object.keys(refused.json().errors), ['id'])
  const still = await db
    .selectFrom('user_totp')
    .select('enabled_at')
    .where('tenant_id', '=', tenant.id)
    .where('user_id', '=', boss.id)
    .executeTakeFirst()
  assert.ok(still?.enabled_at)
  // a peer's factor (no permission beyond the helpdesk's): allowed
  const peer = await given.user(db, tenant, { roleId: helpdeskRole })
  await enrollTotp(peer.token)
  assert.equal(
    (await call(app, helpdesk.token, { method: 'DELETE', url: `/api/users/${peer.id}/totp` })).statusCode,
    204,
  )
})

test('finding 7: a stolen token cannot switch TOTP on without the password', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const stolen = await call(app, user.token, { method: 'POST', url: '/api/users/current/totp', payload: {} })
  assert.equal(stolen.statusCode, 422, stolen.body)
  assert.deepEqual(Object.keys(stolen.json().errors), ['password'])
  const wrong = await call(app, user.token, {
    method: 'POST',
    url: '/api/users/current/totp',
    payload: { password: 'not-the-password' },
  })
  assert.equal(wrong.statusCode, 422)
  assert.ok(await enrollTotp(user.token))
})

// ---- SCIM --------------------------------------------------------------------------------------

test('finding 9: 10 concurrent SCIM PATCHes with one If-Match: exactly one succeeds, the others 412', async () => {
  const tenant = await given.tenant(db)
  const { token } = await scimToken(app, tenant)
  const created = await scim(app, token, 'POST', '/Users', newUser('race@example.com'))
  assert.equal(created.statusCode, 201, created.body)
  const { id, meta } = created.json()
  const answers = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      scim(
        app,
        token,
        'PATCH',
        `/Users/${id}`,
        { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'name.familyName', value: `Racer${i}` }] },
        { 'if-match': meta.version },
      ),
    ),
  )
  const statuses = answers.map((a) => a.statusCode).sort()
  assert.equal(statuses.filter((s) => s === 200).length, 1, JSON.stringify(statuses))
  assert.equal(statuses.filter((s) => s === 412).length, 9, JSON.stringify(statuses))
})

test('finding 10: a 5,000-level nested JSON body is a 400, never a 500 (SCIM and the API)', async () => {
  const tenant = await given.tenant(db)
  const { token } = await scimToken(app, tenant)
  const created = await scim(app, token, 'POST', '/Users', newUser('deep@example.com'))
  const deep = '['.repeat(5000) + ']'.repeat(5000)
  const scimDeep = await app.inject({
    method: 'PATCH',
    url: `/scim/v2/Users/${created.json().id}`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
    payload: `{"schemas":["${PATCH_OP}"],"Operations":[{"op":"replace","path":"displayName","value":${deep}}]}`,
  })
  assert.equal(scimDeep.statusCode, 400, scimDeep.body)
  const apiDeep = await app.inject({
    method: 'PUT',
    url: `/api/users/${tenant.adminId}`,
    headers: { authorization: `Bearer ${tenant.adminToken}`, 'content-type': 'application/json' },
    payload: `{"first_name":${deep}}`,
  })
  assert.equal(apiDeep.statusCode, 400, apiDeep.body)
  assert.equal(apiDeep.json().code, 'body_too_deep')
  // an ordinary nested body still parses
  assert.equal(
    (
      await call(app, tenant.adminToken, {
        method: 'PUT',
        url: `/api/users/${tenant.adminId}`,
        payload: { first_name: 'Ok' },
      })
    ).statusCode,
    200,
  )
})

test('finding 10: anonymous /start is throttled per tenant and address, and the discovery document is cached', async () => {
  const tenant = await given.tenant(db)
  await configureOidc(app, provider, tenant)
  const before = provider.discoveryFetches()
  const answers = await Promise.all(
    Array.from({ length: 60 }, () =>
      app.inject({
        method: 'GET',
        url: `/api/auth/oidc/${tenant.slug}/start?redirect_uri=${encodeURIComponent(SSO_APP_REDIRECT)}`,
      }),
    ),
  )
  const started = answers.filter((a) => a.statusCode === 302).length
  assert.equal(started, 20, JSON.stringify(answers.map((a) => a.statusCode)))
  assert.equal(answers.filter((a) => a.statusCode === 429).length, 40)
  const rows = await db
    .selectFrom('auth_tickets')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .where('kind', '=', 'oidc_state')
    .execute()
  assert.equal(rows.length, 20)
  assert.ok(provider.discoveryFetches() - before <= 1, `${provider.discoveryFetches() - before} discovery fetches`)
})
