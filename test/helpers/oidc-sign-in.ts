import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import { call } from './build-test-app.js'
import type { GivenTenant } from './given.js'
import { signInAt, type TestProvider } from './oidc-provider.js'

/** Where the test provider sends the browser back (its client's redirect URI), and the app page SSO ends on. */
export const OIDC_CALLBACK = 'http://api.test/api/auth/oidc/callback'
export const SSO_APP_REDIRECT = 'http://app.test/sso/done'

/** An administrator points the tenant's single sign-on at the test provider, `settings` on top; returns the stored settings. */
export async function configureOidc(
  app: FastifyInstance,
  provider: TestProvider,
  tenant: GivenTenant,
  settings: Record<string, unknown> = {},
) {
  const res = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: '/api/administration/oidc',
    payload: {
      issuer: provider.issuer,
      client_id: provider.clientId,
      client_secret: provider.clientSecret,
      ...settings,
    },
  })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

/**
 * Start (keeping its browser cookie) → the provider's login as `sub` → the callback request with that
 * cookie: its response, the callback URL, the cookie and the authorization request /start redirected to.
 */
export async function ssoCallback(app: FastifyInstance, tenant: GivenTenant, sub: string) {
  const started = await app.inject({
    method: 'GET',
    url: `/api/auth/oidc/${tenant.slug}/start?redirect_uri=${encodeURIComponent(SSO_APP_REDIRECT)}`,
  })
  assert.equal(started.statusCode, 302, started.body)
  const cookie = String(started.headers['set-cookie'] ?? '').split(';')[0]!
  const back = await signInAt(String(started.headers.location), sub, OIDC_CALLBACK)
  const url = `${back.pathname}${back.search}`
  return {
    response: await app.inject({ method: 'GET', url, headers: cookie ? { cookie } : {} }),
    url,
    cookie,
    authorization: new URL(String(started.headers.location)),
  }
}
