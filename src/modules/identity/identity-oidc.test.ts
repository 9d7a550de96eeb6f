import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../app.js'
import { bearer, call, instrumentTestApp, testConfig } from '../../../test/helpers/build-test-app.js'
import { given, TEST_PASSWORD, type GivenTenant } from '../../../test/helpers/given.js'
import { startOidcProvider, type TestProvider } from '../../../test/helpers/oidc-provider.js'
import { configureOidc, OIDC_CALLBACK, SSO_APP_REDIRECT, ssoCallback } from '../../../test/helpers/oidc-sign-in.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()
const OPERATOR = 'operator-test-token-0123456789'
let app: FastifyInstance
let provider: TestProvider

before(async () => {
  provider = await startOidcProvider(OIDC_CALLBACK)
  const config = testConfig({ OIDC_ALLOW_PRIVATE_NETWORKS: 'true', OPERATOR_TOKEN: OPERATOR })
  app = await instrumentTestApp(await buildApp({ config, db }))
})
after(async () => {
  await app.close()
  await provider.close()
})

/** The one-time login code of the callback's redirect (in its fragment). */
const loginCodeOf = (location: unknown) =>
  new URLSearchParams(new URL(String(location)).hash.slice(1)).get('login_code')!

/** An administrator links the provider's `sub` to a user (first sign-ins never link by name). */
async function linkBy(tenant: GivenTenant, userId: number, sub: string) {
  const res = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/users/${userId}/oidc-identity`,
    payload: { subject: sub },
  })
  assert.equal(res.statusCode, 204, res.body)
}

async function ssoLogin(tenant: GivenTenant, sub: string) {
  const { response } = await ssoCallback(app, tenant, sub)
  assert.equal(response.statusCode, 302, response.body)
  const location = new URL(String(response.headers.location))
  assert.equal(`${location.origin}${location.pathname}`, SSO_APP_REDIRECT)
  const code = loginCodeOf(location)
  return app.inject({ method: 'POST', url: '/api/auth/login', payload: { login_code: code } })
}

test('settings: discovery is checked, the secret is write-only and sealed, tenant.administrate is required', async () => {
  const tenant = await given.tenant(db)
  const settings = await configureOidc(app, provider, tenant)
  assert.equal(settings.client_secret_set, true)
  assert.equal(settings.client_secret, undefined)
  assert.equal(settings.scopes, 'openid profile email')
  assert.equal(settings.username_claim, 'preferred_username')
  assert.equal(settings.provisioning, 'off')
  assert.equal(settings.password_login, true)
  assert.equal(settings.redirect_uri, OIDC_CALLBACK)
  const stored = await db
    .selectFrom('oidc_providers')
    .select('client_secret')
    .where('tenant_id', '=', tenant.id)
    .executeTakeFirstOrThrow()
  assert.ok(stored.client_secret.startsWith('enc:v1.'))
  const read = await call(app, tenant.adminToken, { method: 'GET', url: '/api/administration/oidc' })
  assert.equal(read.statusCode, 200)
  assert.ok(!read.body.includes(provider.clientSecret))

  const employee = await given.user(db, tenant)
  assert.equal((await call(app, employee.token, { method: 'GET', url: '/api/administration/oidc' })).statusCode, 403)

  const wrongIssuer = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: '/api/administration/oidc',
    payload: { issuer: `${provider.issuer}/nothing-here`, client_id: 'x', client_secret: 'y' },
  })
  assert.equal(wrongIssuer.statusCode, 422)
  assert.equal(wrongIssuer.json().code, 'oidc_discovery_failed')
  assert.deepEqual(Object.keys(wrongIssuer.json().errors), ['issuer'])
  const noRole = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: '/api/administration/oidc',
    payload: { issuer: provider.issuer, client_id: provider.clientId, provisioning: 'create' },
  })
  assert.equal(noRole.statusCode, 422)
  assert.deepEqual(Object.keys(noRole.json().errors), ['default_role_id'])

  assert.equal(
    (await call(app, tenant.adminToken, { method: 'DELETE', url: '/api/administration/oidc' })).statusCode,
    204,
  )
  assert.equal((await call(app, tenant.adminToken, { method: 'GET', url: '/api/administration/oidc' })).statusCode, 404)
  const actions = (
    await db
      .selectFrom('audit_log')
      .select(['action', 'changes'])
      .where('tenant_id', '=', tenant.id)
      .orderBy('id')
      .execute()
  ).filter((r) => r.action.startsWith('oidc.'))
  assert.deepEqual(
    actions.map((r) => r.action),
    ['oidc.create', 'oidc.delete'],
  )
  assert.ok(!JSON.stringify(actions).includes(provider.clientSecret))
})

test('an administrator links an identity; sign-ins find the link (state, nonce, PKCE at the provider)', async () => {
  const tenant = await given.tenant(db)
  const anna = await given.user(db, tenant, { username: 'anna.sso' })
  await configureOidc(app, provider, tenant)
  provider.accounts.set('sub-anna', { sub: 'sub-anna', preferred_username: 'Anna.SSO', email: 'anna@corp.test' })
  const unlinked = (await ssoCallback(app, tenant, 'sub-anna')).response
  assert.equal(unlinked.statusCode, 403, 'never linked by the username claim (issue 39)')
  assert.equal(unlinked.json().code, 'sso_link_required')
  await linkBy(tenant, anna.id, 'sub-anna')

  const { authorization } = await ssoCallback(app, tenant, 'sub-anna')
  assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256')
  assert.ok(authorization.searchParams.get('state') && authorization.searchParams.get('nonce'))
  assert.equal(authorization.searchParams.get('redirect_uri'), OIDC_CALLBACK)

  const signedIn = await ssoLogin(tenant, 'sub-anna')
  assert.equal(signedIn.statusCode, 200, signedIn.body)
  assert.equal(signedIn.json().user.id, anna.id)
  const me = await call(app, signedIn.json().access_token, { method: 'GET', url: '/api/users/current' })
  assert.equal(me.json().id, anna.id)
  const link = await db
    .selectFrom('oidc_identities')
    .select(['user_id', 'issuer', 'subject'])
    .where('tenant_id', '=', tenant.id)
    .executeTakeFirstOrThrow()
  assert.deepEqual(link, { user_id: anna.id, issuer: provider.issuer, subject: 'sub-anna' })

  // renamed at the provider: the link still finds her
  provider.accounts.set('sub-anna', { sub: 'sub-anna', preferred_username: 'someone.else' })
  const again = await ssoLogin(tenant, 'sub-anna')
  assert.equal(again.json().user.id, anna.id)
  const actions = (await db.selectFrom('audit_log').select('action').where('tenant_id', '=', tenant.id).execute()).map(
    (r) => r.action,
  )
  assert.ok(actions.includes('oidc.link'))
  assert.equal(actions.filter((a) => a === 'auth.login').length, 2)
})

test('provisioning creates an unknown user with the default role when the email domain is allowed', async () => {
  const tenant = await given.tenant(db)
  await configureOidc(app, provider, tenant, {
    provisioning: 'create',
    default_role_id: tenant.employeeRoleId,
    allowed_email_domains: ['corp.test'],
  })
  provider.accounts.set('sub-new', {
    sub: 'sub-new',
    preferred_username: 'new.hire',
    email: 'new.hire@corp.test',
    given_name: 'New',
    family_name: 'Hire',
  })
  const signedIn = await ssoLogin(tenant, 'sub-new')
  assert.equal(signedIn.statusCode, 200, signedIn.body)
  const user = await db
    .selectFrom('users')
    .select(['id', 'username', 'email', 'role_id', 'first_name', 'last_name'])
    .where('tenant_id', '=', tenant.id)
    .where('username', '=', 'new.hire')
    .executeTakeFirstOrThrow()
  assert.equal(user.role_id, tenant.employeeRoleId)
  assert.equal(user.email, 'new.hire@corp.test')
  assert.equal(user.first_name, 'New')
  assert.equal(signedIn.json().user.id, user.id)

  provider.accounts.set('sub-outsider', { sub: 'sub-outsider', preferred_username: 'outsider', email: 'x@other.test' })
  const { response } = await ssoCallback(app, tenant, 'sub-outsider')
  assert.equal(response.statusCode, 403)
  assert.equal(response.json().code, 'sso_user_unknown')
})

test('provisioning at the users quota: 403 quota_exceeded naming it, nothing created; after the operator raises it the sign-in creates the user', async () => {
  const tenant = await given.tenant(db)
  await configureOidc(app, provider, tenant, { provisioning: 'create', default_role_id: tenant.employeeRoleId })
  provider.accounts.set('sub-quota', {
    sub: 'sub-quota',
    preferred_username: 'quota.hire',
    email: 'quota.hire@corp.test',
    given_name: 'Quota',
    family_name: 'Hire',
  })
  const usersQuota = async () =>
    (await call(app, tenant.adminToken, { method: 'GET', url: '/api/administration/usage' })).json().data.quotas.users
  const setUsersQuota = async (users: number) => {
    const res = await app.inject({
      method: 'PUT',
      url: `/api/operator/tenants/${tenant.slug}/limits`,
      headers: bearer(OPERATOR),
      payload: { quotas: { users } },
    })
    assert.equal(res.statusCode, 200, res.body)
  }
  const { used } = await usersQuota()
  await setUsersQuota(used)
  const written = async () => ({
    users: (
      await db
        .selectFrom('users')
        .select('id')
        .where('tenant_id', '=', tenant.id)
        .where('username', '=', 'quota.hire')
        .execute()
    ).length,
    identities: (await db.selectFrom('oidc_identities').select('user_id').where('tenant_id', '=', tenant.id).execute())
      .length,
    audit: (
      await db
        .selectFrom('audit_log')
        .select(['action', 'changes'])
        .where('tenant_id', '=', tenant.id)
        .where('action', 'in', ['user.provision', 'auth.login_failed'])
        .orderBy('id')
        .execute()
    ).map((r) => `${r.action} ${(r.changes as { reason?: string } | null)?.reason ?? ''}`.trim()),
  })

  const { response } = await ssoCallback(app, tenant, 'sub-quota')
  assert.equal(response.statusCode, 403, response.body)
  assert.equal(response.headers['content-type'], 'application/problem+json')
  const problem = response.json()
  assert.equal(problem.code, 'quota_exceeded')
  assert.deepEqual(problem.errors, { quota: ['users'] })
  assert.deepEqual([problem.quota, problem.limit, problem.used], ['users', used, used])
  assert.match(problem.detail, /^No account can be created for this identity: .*users quota/)
  assert.deepEqual(
    await written(),
    { users: 0, identities: 0, audit: ['auth.login_failed quota_exceeded:users'] },
    'no user, no linked identity, no provisioning record: only the refused sign-in',
  )

  await setUsersQuota(used + 1)
  const signedIn = await ssoLogin(tenant, 'sub-quota')
  assert.equal(signedIn.statusCode, 200, signedIn.body)
  assert.deepEqual(await written(), {
    users: 1,
    identities: 1,
    audit: ['auth.login_failed quota_exceeded:users', 'user.provision'],
  })
  assert.deepEqual(await usersQuota(), { used: used + 1, limit: used + 1 })
})

test('an unknown user is refused with sso_user_unknown; a disabled user with sso_user_disabled', async () => {
  const tenant = await given.tenant(db)
  await configureOidc(app, provider, tenant)
  provider.accounts.set('sub-stranger', { sub: 'sub-stranger', preferred_username: 'stranger' })
  const { response } = await ssoCallback(app, tenant, 'sub-stranger')
  assert.equal(response.statusCode, 403)
  assert.equal(response.headers['content-type'], 'application/problem+json')
  assert.equal(response.json().code, 'sso_user_unknown')

  const inactive = await given.user(db, tenant, { username: 'inactive.sso', active: false })
  await linkBy(tenant, inactive.id, 'sub-inactive')
  provider.accounts.set('sub-inactive', { sub: 'sub-inactive', preferred_username: 'inactive.sso' })
  const refused = (await ssoCallback(app, tenant, 'sub-inactive')).response
  assert.equal(refused.statusCode, 403)
  assert.equal(refused.json().code, 'sso_user_disabled')
  const failures = await db
    .selectFrom('audit_log')
    .select('changes')
    .where('tenant_id', '=', tenant.id)
    .where('action', '=', 'auth.login_failed')
    .execute()
  assert.equal(failures.length, 2)
})

test('wrong state, replayed state, replayed code and an expired login_code are refused', async () => {
  const tenant = await given.tenant(db)
  const replay = await given.user(db, tenant, { username: 'replay.sso' })
  await configureOidc(app, provider, tenant)
  await linkBy(tenant, replay.id, 'sub-replay')
  provider.accounts.set('sub-replay', { sub: 'sub-replay', preferred_username: 'replay.sso' })

  const wrong = await app.inject({
    method: 'GET',
    url: `/api/auth/oidc/callback?code=abc&state=${tenant.id}.${'x'.repeat(43)}`,
  })
  assert.equal(wrong.statusCode, 400)
  assert.equal(wrong.json().code, 'oidc_invalid_state')

  const { response, url, cookie } = await ssoCallback(app, tenant, 'sub-replay')
  assert.equal(response.statusCode, 302)
  const replayed = await app.inject({ method: 'GET', url, headers: { cookie } })
  assert.equal(replayed.statusCode, 400, 'the state is single-use')
  assert.equal(replayed.json().code, 'oidc_invalid_state')

  // the used code with the state of a new flow: the provider refuses it
  const started = await app.inject({
    method: 'GET',
    url: `/api/auth/oidc/${tenant.slug}/start?redirect_uri=${encodeURIComponent(SSO_APP_REDIRECT)}`,
  })
  const freshState = new URL(String(started.headers.location)).searchParams.get('state')!
  const oldCode = new URL(url, 'http://api.test').searchParams.get('code')!
  const codeReplay = await app.inject({
    method: 'GET',
    url: `/api/auth/oidc/callback?code=${encodeURIComponent(oldCode)}&state=${encodeURIComponent(freshState)}`,
    headers: { cookie: String(started.headers['set-cookie']).split(';')[0]! },
  })
  assert.equal(codeReplay.statusCode, 401, codeReplay.body)
  assert.equal(codeReplay.json().code, 'sso_failed')

  const code = loginCodeOf(response.headers.location)
  await db
    .updateTable('auth_tickets')
    .set({ expires_at: '2000-01-01 00:00:00' })
    .where('tenant_id', '=', tenant.id)
    .where('kind', '=', 'login_code')
    .execute()
  const expired = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { login_code: code } })
  assert.equal(expired.statusCode, 401)
  assert.equal(expired.json().code, 'invalid_login_code')

  const fresh = await ssoLogin(tenant, 'sub-replay')
  assert.equal(fresh.statusCode, 200)
})

test('a login_code works once; the redirect_uri must be under APP_URL', async () => {
  const tenant = await given.tenant(db)
  const once = await given.user(db, tenant, { username: 'once.sso' })
  await configureOidc(app, provider, tenant)
  await linkBy(tenant, once.id, 'sub-once')
  provider.accounts.set('sub-once', { sub: 'sub-once', preferred_username: 'once.sso' })
  const { response } = await ssoCallback(app, tenant, 'sub-once')
  const code = loginCodeOf(response.headers.location)
  assert.equal(
    (await app.inject({ method: 'POST', url: '/api/auth/login', payload: { login_code: code } })).statusCode,
    200,
  )
  const second = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { login_code: code } })
  assert.equal(second.statusCode, 401)

  const evil = await app.inject({
    method: 'GET',
    url: `/api/auth/oidc/${tenant.slug}/start?redirect_uri=${encodeURIComponent('https://evil.test/steal')}`,
  })
  assert.equal(evil.statusCode, 422)
  assert.deepEqual(Object.keys(evil.json().errors), ['redirect_uri'])
})

test('password_login: false refuses password sign-in except for holders of *', async () => {
  const tenant = await given.tenant(db)
  await given.user(db, tenant, { username: 'pw.employee' })
  await configureOidc(app, provider, tenant, { password_login: false })
  const refused = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: 'pw.employee', password: TEST_PASSWORD },
  })
  assert.equal(refused.statusCode, 403)
  assert.equal(refused.json().code, 'password_login_disabled')
  const wrong = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: 'pw.employee', password: 'wrong-password' },
  })
  assert.equal(wrong.statusCode, 401, 'a wrong password reveals nothing more')
  const admin = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: 'admin', password: TEST_PASSWORD },
  })
  assert.equal(admin.statusCode, 200, 'break-glass')
})

test('the provider being down: a clear 502 problem, and the server goes on', async () => {
  const tenant = await given.tenant(db)
  const down = await startOidcProvider(OIDC_CALLBACK)
  await call(app, tenant.adminToken, {
    method: 'PUT',
    url: '/api/administration/oidc',
    payload: { issuer: down.issuer, client_id: down.clientId, client_secret: down.clientSecret },
  }).then((res) => assert.equal(res.statusCode, 200, res.body))
  await down.close()
  const started = await app.inject({
    method: 'GET',
    url: `/api/auth/oidc/${tenant.slug}/start?redirect_uri=${encodeURIComponent(SSO_APP_REDIRECT)}`,
  })
  assert.equal(started.statusCode, 502)
  assert.equal(started.headers['content-type'], 'application/problem+json')
  assert.equal(started.json().code, 'oidc_provider_unavailable')
  const saved = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: '/api/administration/oidc',
    payload: { issuer: down.issuer, client_id: down.clientId },
  })
  assert.equal(saved.statusCode, 422)
  assert.deepEqual(Object.keys(saved.json().errors), ['issuer'])
  assert.equal((await app.inject({ method: 'GET', url: '/health/live' })).statusCode, 200)
})
