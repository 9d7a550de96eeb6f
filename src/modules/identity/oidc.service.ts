import { randomBytes } from 'node:crypto'
import type { Config } from '../../config.js'
import type { AppDeps } from '../../platform/app-module.js'
import { currentRequestContext } from '../../platform/audit/request-context.js'
import type { Actor } from '../../platform/auth/actor.js'
import { verifyPassword } from '../../platform/auth/passwords.js'
import { assertHoldsEvery, HOLDER_BEYOND_ACTOR } from '../../platform/auth/permissions.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import type { Db } from '../../platform/db/schema.js'
import { AppError, invalid, notFound } from '../../platform/http/errors.js'
import { secretBoxFor } from '../../platform/secrets/secret-box.js'
import {
  type Authorization,
  BROWSER_COOKIE,
  browserCookie,
  CALLBACK_PATH,
  cookieValue,
  isUnderAppUrl,
  safeEqual,
  sha256,
  STATE_TTL_SECONDS,
  withFragment,
} from './oidc-browser.js'
import { client, describe, discoverProvider, isUnavailable, unavailable } from './oidc-client.js'
import { findOrProvisionUser, linkIdentity, providerDidMfa } from './oidc-provisioning.service.js'
import * as queries from './oidc.queries.js'
import type { ProviderRow } from './oidc.queries.js'
import type { AdminLinkBody, CallbackQuery, LinkBody } from './oidc.schemas.js'
import { proveSecondFactor } from './second-factor.service.js'
import { findTenantBySlug, findUserPasswordHash, findUserPermissions } from './sign-in.queries.js'
import { completeSignIn, recordFailedSignIn, secondFactorGate, signInEligibleUser } from './sign-in.service.js'
import { consumeTicket, issueTicket } from './tickets.service.js'

/** Authorization requests (`/start`, linking) per tenant and client address in a minute. */
const STARTS_PER_MINUTE = 20
/** How long a provider's discovery document (and its keys' location) is reused. */
const DISCOVERY_TTL_MS = 5 * 60 * 1000
/** The `login_code` handed to the app after the callback: once, within this long. */
export const LOGIN_CODE_TTL_SECONDS = 60

export type OidcService = ReturnType<typeof createOidcService>

/** Single sign-on through the tenant's provider: the code flow, linking an identity, the callback. */
export function createOidcService({ db, config }: AppDeps) {
  const box = secretBoxFor(config.secrets)
  const redirectUri = `${config.baseUrl}${CALLBACK_PATH}`

  // discovery documents per tenant and settings version, for DISCOVERY_TTL_MS (issue 39: not one
  // outbound fetch per anonymous /start); a failed discovery is not kept
  const discovered = new Map<string, { at: number; configuration: Promise<client.Configuration> }>()

  async function configurationFor(provider: ProviderRow) {
    const key = `${provider.tenant_id}|${provider.updated_at}`
    const cached = discovered.get(key)
    if (cached && Date.now() - cached.at < DISCOVERY_TTL_MS) return cached.configuration
    const configuration = discoverProvider(config, {
      issuer: provider.issuer,
      client_id: provider.client_id,
      client_secret: box.open(provider.client_secret),
    }).catch((error: unknown) => {
      discovered.delete(key)
      throw unavailable(error)
    })
    for (const [k, v] of discovered) if (Date.now() - v.at >= DISCOVERY_TTL_MS) discovered.delete(k)
    discovered.set(key, { at: Date.now(), configuration })
    return configuration
  }

  /** Redirect URL to the provider's authorization endpoint (code flow, PKCE S256, state, nonce). */
  async function start(slug: string, appRedirect: string): Promise<Authorization> {
    if (!isUnderAppUrl(appRedirect, config.appUrl))
      throw invalid({ redirect_uri: [`must be a URL under ${config.appUrl}`] })
    const tenant = await findTenantBySlug(db, slug.toLowerCase())
    const provider = tenant && (await queries.findProvider(db, tenant.id))
    if (!tenant || !provider) throw notFound('Single sign-on for this tenant')
    return authorizationUrl(tenant.id, provider, appRedirect, null)
  }

  /**
   * `POST /api/users/current/oidc-link`: a signed-in user proves the account (password, and a TOTP
   * code when TOTP is on) and gets the provider's URL; the identity they sign in with there is linked
   * to this account by the callback.
   */
  async function startLink(actor: Actor, body: LinkBody): Promise<Authorization> {
    if (!isUnderAppUrl(body.redirect_uri, config.appUrl))
      throw invalid({ redirect_uri: [`must be a URL under ${config.appUrl}`] })
    const provider = await queries.findProvider(db, actor.tenantId)
    if (!provider) throw notFound('Single sign-on for this tenant')
    const user = await findUserPasswordHash(db, actor.tenantId, actor.userId)
    if (!(await verifyPassword(user.password_hash, body.password)))
      throw invalid({ password: ['is wrong'] }, 'The password is wrong', 'invalid_password')
    await proveSecondFactor(db, config, actor.tenantId, actor.userId, body.totp)
    return authorizationUrl(actor.tenantId, provider, body.redirect_uri, actor.userId)
  }

  /** An administrator links an identity (the provider's `sub`) to a user holding no more than they do. */
  async function adminLink(actor: Actor, userId: number, body: AdminLinkBody): Promise<void> {
    requirePermission(actor, 'users.administrate')
    const user = await findUserPermissions(db, actor.tenantId, userId, { liveOnly: true })
    if (!user) throw notFound('User')
    // whoever links an identity can sign in as that user: only for users holding no more than the actor
    assertHoldsEvery(actor, user.permissions, 'subject', HOLDER_BEYOND_ACTOR)
    const provider = await queries.findProvider(db, actor.tenantId)
    if (!provider) throw notFound('Single sign-on for this tenant')
    await linkIdentity(db, actor.tenantId, userId, { issuer: provider.issuer, subject: body.subject }, 'administrator')
  }

  async function authorizationUrl(
    tenantId: number,
    provider: ProviderRow,
    appRedirect: string,
    linkUserId: number | null,
  ): Promise<Authorization> {
    const configuration = await configurationFor(provider)
    const verifier = client.randomPKCECodeVerifier()
    const nonce = client.randomNonce()
    const browser = randomBytes(32).toString('base64url')
    const ip = currentRequestContext().ip ?? 'unknown'
    // at most STARTS_PER_MINUTE authorization requests per tenant and client address, counted under a
    // lock (one for the whole fleet) in the statement's own transaction: an anonymous flood writes no rows
    const state = await db.transaction().execute(async (trx) => {
      await queries.lockStarts(trx, tenantId, ip)
      if ((await queries.countRecentStarts(trx, tenantId, ip)) >= STARTS_PER_MINUTE)
        throw new AppError(
          429,
          'too_many_attempts',
          'Too many sign-in starts from this address; try again later',
          undefined,
          {
            'Retry-After': '60',
          },
        )
      return issueTicket(trx, {
        tenantId,
        kind: 'oidc_state',
        userId: linkUserId,
        ttlSeconds: STATE_TTL_SECONDS,
        data: {
          ip,
          nonce,
          verifier: box.seal(verifier),
          redirect_uri: appRedirect,
          link: linkUserId !== null,
          browser: sha256(browser),
        },
      })
    })
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      scope: provider.scopes,
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })
    return { url: url.toString(), cookie: browserCookie(browser, config.baseUrl) }
  }

  /**
   * The provider's redirect back: checks state (once, 10 minutes), exchanges the code (PKCE), checks
   * the ID token (signature, issuer, audience, expiry, nonce), finds or links or provisions the user,
   * and redirects to the app with a one-time `login_code`.
   */
  async function callback(query: CallbackQuery, cookieHeader: string | undefined): Promise<string> {
    if (!query.state) throw new AppError(400, 'oidc_invalid_state', 'The state parameter is missing')
    const ticket = await consumeTicket(db, 'oidc_state', query.state)
    if (!ticket)
      throw new AppError(400, 'oidc_invalid_state', 'The state is unknown, expired or was already used: sign in again')
    // the browser that comes back must be the one that started (its cookie): no login CSRF
    const browser = cookieValue(cookieHeader, BROWSER_COOKIE)
    const expected = typeof ticket.data.browser === 'string' ? ticket.data.browser : ''
    if (!browser || !safeEqual(sha256(browser), expected))
      throw new AppError(
        400,
        'oidc_invalid_state',
        'This sign-in was not started in this browser (its cookie is missing or another): sign in again',
      )
    const tenantId = ticket.tenantId
    const provider = await queries.findProvider(db, tenantId)
    if (!provider) throw notFound('Single sign-on for this tenant')
    if (query.error) {
      await recordFailedSignIn(db, tenantId, null, { method: 'sso', reason: `provider_error:${query.error}` })
      throw new AppError(401, 'sso_failed', `The identity provider refused the sign-in (${query.error})`)
    }
    const configuration = await configurationFor(provider)
    const nonce = String(ticket.data.nonce)
    const verifier = box.open(String(ticket.data.verifier))
    const appRedirect = String(ticket.data.redirect_uri)
    const current = new URL(redirectUri)
    for (const [key, value] of Object.entries(query))
      if (typeof value === 'string') current.searchParams.set(key, value)
    let claims: Record<string, unknown>
    // amr/acr only from the signed ID token (never the userinfo answer)
    let idTokenClaims: Record<string, unknown>
    try {
      const tokens = await client.authorizationCodeGrant(configuration, current, {
        pkceCodeVerifier: verifier,
        expectedState: query.state,
        expectedNonce: nonce,
        idTokenExpected: true,
      })
      const idClaims = tokens.claims()
      if (!idClaims) throw new Error('the token response has no ID token')
      claims = { ...idClaims }
      idTokenClaims = { ...idClaims }
      // providers may keep profile claims out of the ID token (OIDC Core 5.4): ask the userinfo endpoint
      const wanted = [provider.username_claim, provider.email_claim ?? 'email', 'given_name', 'family_name']
      if (wanted.some((name) => claims[name] === undefined) && configuration.serverMetadata().userinfo_endpoint) {
        const info = await client.fetchUserInfo(configuration, tokens.access_token, idClaims.sub)
        claims = { ...info, ...claims }
      }
    } catch (error) {
      if (isUnavailable(error)) throw unavailable(error)
      await recordFailedSignIn(db, tenantId, null, { method: 'sso', reason: `rejected: ${describe(error)}` })
      throw new AppError(401, 'sso_failed', `The sign-in could not be verified: ${describe(error)}`)
    }
    let userId: number
    if (ticket.data.link === true && ticket.userId !== null) {
      // started from a signed-in session that proved password and second factor
      if (!(await signInEligibleUser(db, tenantId, ticket.userId)))
        throw new AppError(403, 'sso_user_disabled', 'This account is disabled')
      await linkIdentity(
        db,
        tenantId,
        ticket.userId,
        { issuer: String(claims.iss), subject: String(claims.sub) },
        'session',
      )
      userId = ticket.userId
    } else userId = await findOrProvisionUser(db, tenantId, provider, claims, config.limits.quotas)
    const code = await issueTicket(db, {
      tenantId,
      kind: 'login_code',
      userId,
      ttlSeconds: LOGIN_CODE_TTL_SECONDS,
      data: { provider_mfa: providerDidMfa(provider, idTokenClaims) },
    })
    return withFragment(appRedirect, 'login_code', code)
  }

  return { start, startLink, adminLink, callback }
}

/** `POST /api/auth/login {login_code}`: the token for the user the SSO callback identified. */
export async function exchangeLoginCode(db: Db, config: Config, code: string, deviceName: string | undefined) {
  const ticket = await consumeTicket(db, 'login_code', code)
  if (!ticket || ticket.userId === null)
    throw new AppError(401, 'invalid_login_code', 'The login code is invalid, used or expired: sign in again')
  const eligible = await signInEligibleUser(db, ticket.tenantId, ticket.userId)
  if (!eligible) {
    await recordFailedSignIn(db, ticket.tenantId, ticket.userId, { method: 'sso', reason: 'user_disabled' })
    throw new AppError(403, 'sso_user_disabled', 'This account is disabled')
  }
  // the second factor after SSO (issue 39): asked unless the ID token shows the provider did MFA
  const gate =
    ticket.data.provider_mfa === true
      ? { mfaEnrollmentOnly: false }
      : await secondFactorGate(db, ticket.tenantId, ticket.userId, eligible.requires_mfa, deviceName)
  return completeSignIn(db, config, {
    tenantId: ticket.tenantId,
    userId: ticket.userId,
    method: 'sso',
    deviceName: deviceName ?? null,
    mfaEnrollmentOnly: gate.mfaEnrollmentOnly,
  })
}
