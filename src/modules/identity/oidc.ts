import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { Type, type Static } from 'typebox'
import type { Config, QuotaLimits } from '../../config.js'
import { currentRequestContext } from '../../platform/audit/request-context.js'
import type { AppDeps } from '../../platform/app-module.js'
import { diff, recordAudit } from '../../platform/audit/audit-log.js'
import type { Actor } from '../../platform/auth/actor.js'
import { UNUSABLE_PASSWORD_HASH, verifyPassword } from '../../platform/auth/passwords.js'
import { assertHoldsEvery } from '../../platform/auth/permissions.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import type { Db } from '../../platform/db/schema.js'
import { AppError, conflict, FieldErrorCollector, invalid, notFound } from '../../platform/http/errors.js'
import { errorResponses, IdSchema, Nullable, TimestampSchema } from '../../platform/http/schemas.js'
import { assertQuota } from '../../platform/limits/quotas.js'
import { isSealed, secretBoxFor, type SecretHolder } from '../../platform/secrets/secret-box.js'
import { insertUser, USERNAME_PATTERN } from '../users/index.js'
import { client, discoverProvider, isUnavailable } from './oidc-client.js'
import { completeSignIn, recordFailedSignIn, secondFactorGate, signInEligibleUser } from './sign-in.js'
import { proveSecondFactor } from './totp.js'
import { consumeTicket, issueTicket } from './tickets.js'

/** An authorization request (its `state`) must come back within this long, once. */
const STATE_TTL_SECONDS = 10 * 60
/** Authorization requests (`/start`, linking) per tenant and client address in a minute. */
const STARTS_PER_MINUTE = 20
/** How long a provider's discovery document (and its keys' location) is reused. */
const DISCOVERY_TTL_MS = 5 * 60 * 1000
/** The `login_code` handed to the app after the callback: once, within this long. */
export const LOGIN_CODE_TTL_SECONDS = 60
const CALLBACK_PATH = '/api/auth/oidc/callback'
/** RFC 8176 methods that are a second factor or several (Entra ID sends `mfa`; Okta `mfa`, `otp`, `hwk`, `swk`…). */
export const DEFAULT_MFA_AMR_VALUES = ['mfa', 'otp', 'hwk', 'swk', 'fido', 'sc']

// ---- schemas -----------------------------------------------------------------------------------

const Domain = Type.String({
  pattern: '^[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$',
  maxLength: 253,
  description: 'e.g. example.com',
})
export const OidcSettingsBodySchema = Type.Object(
  {
    issuer: Type.String({ format: 'uri', maxLength: 500, description: 'the issuer identifier (discovery base)' }),
    client_id: Type.String({ minLength: 1, maxLength: 255 }),
    client_secret: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1000, description: 'write-only; required when none is stored yet' }),
    ),
    scopes: Type.Optional(Type.String({ minLength: 1, maxLength: 500, default: 'openid profile email' })),
    username_claim: Type.Optional(Type.String({ minLength: 1, maxLength: 100, default: 'preferred_username' })),
    email_claim: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100, default: 'email' }))),
    provisioning: Type.Optional(
      Type.Union([Type.Literal('off'), Type.Literal('create')], {
        default: 'off',
        description: '`create`: a first sign-in of an unknown user creates them (default role, allowed email domains)',
      }),
    ),
    default_role_id: Type.Optional(Nullable(IdSchema)),
    allowed_email_domains: Type.Optional(Type.Array(Domain, { maxItems: 100 })),
    password_login: Type.Optional(
      Type.Boolean({
        default: true,
        description: '`false`: password sign-in only for users whose role holds `*` (break-glass)',
      }),
    ),
    link_by_verified_email: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          '`true`: a first sign-in links the one local account with the same email when the ID token says `email_verified: true` (only for a provider that verifies emails)',
      }),
    ),
    mfa_amr_values: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        maxItems: 50,
        description:
          '`amr` values of the ID token that count as multi-factor authentication at the provider (default mfa, otp, hwk, swk, fido, sc)',
      }),
    ),
    mfa_acr_values: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
        maxItems: 50,
        description: '`acr` values that count as multi-factor authentication (default none)',
      }),
    ),
  },
  { additionalProperties: false },
)
type OidcSettingsBody = Static<typeof OidcSettingsBodySchema>

export const OidcSettingsSchema = Type.Object(
  {
    issuer: Type.String(),
    client_id: Type.String(),
    client_secret_set: Type.Boolean({ description: 'the secret itself is never answered' }),
    scopes: Type.String(),
    username_claim: Type.String(),
    email_claim: Nullable(Type.String()),
    provisioning: Type.Union([Type.Literal('off'), Type.Literal('create')]),
    default_role_id: Nullable(Type.Integer()),
    allowed_email_domains: Type.Array(Type.String()),
    password_login: Type.Boolean(),
    link_by_verified_email: Type.Boolean(),
    mfa_amr_values: Type.Array(Type.String()),
    mfa_acr_values: Type.Array(Type.String()),
    redirect_uri: Type.String({ description: 'register this redirect URI at the provider' }),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
  },
  { $id: 'OidcSettings' },
)
type OidcSettings = Static<typeof OidcSettingsSchema>

const StartParamsSchema = Type.Object({ tenant: Type.String({ minLength: 1, maxLength: 63 }) })
const StartQuerySchema = Type.Object({
  redirect_uri: Type.String({
    minLength: 1,
    maxLength: 2000,
    description: 'where the app receives `#login_code=…`: a URL under APP_URL',
  }),
})
const CallbackQuerySchema = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 4000 })),
  state: Type.Optional(Type.String({ maxLength: 200 })),
  iss: Type.Optional(Type.String({ maxLength: 500 })),
  session_state: Type.Optional(Type.String({ maxLength: 500 })),
  scope: Type.Optional(Type.String({ maxLength: 2000 })),
  authuser: Type.Optional(Type.String({ maxLength: 50 })),
  prompt: Type.Optional(Type.String({ maxLength: 100 })),
  hd: Type.Optional(Type.String({ maxLength: 253 })),
  error: Type.Optional(Type.String({ maxLength: 200 })),
  error_description: Type.Optional(Type.String({ maxLength: 2000 })),
  error_uri: Type.Optional(Type.String({ maxLength: 2000 })),
})
type StartParams = Static<typeof StartParamsSchema>
type StartQuery = Static<typeof StartQuerySchema>
type CallbackQuery = Static<typeof CallbackQuerySchema>
const LinkBodySchema = Type.Object(
  {
    password: Type.String({ minLength: 1, maxLength: 256, description: 'your current password' }),
    totp: Type.Optional(Type.String({ pattern: '^[0-9]{6}$', description: 'a current TOTP code (when TOTP is on)' })),
    redirect_uri: Type.String({ minLength: 1, maxLength: 2000, description: 'a URL under APP_URL' }),
  },
  { additionalProperties: false },
)
type LinkBody = Static<typeof LinkBodySchema>
const LinkAnswerSchema = Type.Object({
  authorization_url: Type.String({ description: 'send the browser here; the identity signed in with is linked' }),
})
const AdminLinkBodySchema = Type.Object(
  { subject: Type.String({ minLength: 1, maxLength: 255, description: "the provider's `sub` of the person" }) },
  { additionalProperties: false },
)
type AdminLinkBody = Static<typeof AdminLinkBodySchema>
const UserParamsSchema = Type.Object({ id: IdSchema })
const RedirectSchema = Type.Null({ description: 'a redirect (Location header)' })

// ---- provider settings -------------------------------------------------------------------------

const providerOf = (db: Db, tenantId: number) =>
  db.selectFrom('oidc_providers').selectAll().where('tenant_id', '=', tenantId).executeTakeFirst()

/** Whether the tenant allows password sign-in (no provider, or one with `password_login`). */
export async function passwordLoginAllowed(db: Db, tenantId: number): Promise<boolean> {
  const row = await db
    .selectFrom('oidc_providers')
    .select('password_login')
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst()
  return row?.password_login ?? true
}

const unavailable = (error: unknown) =>
  new AppError(
    502,
    'oidc_provider_unavailable',
    `The identity provider cannot be reached: ${error instanceof Error ? error.message : String(error)}`,
  )

/**
 * `#login_code=…` on the app's redirect URI: a fragment never reaches a server, a log or a
 * `Referer` (issue 39); the app reads and removes it.
 */
function withFragment(uri: string, name: string, value: string): string {
  const url = new URL(uri)
  url.hash = new URLSearchParams({ [name]: value }).toString()
  return url.toString()
}

/** The cookie that binds an authorization request to the browser that started it (login CSRF, issue 39). */
export const BROWSER_COOKIE = 'wp_sso_browser'
const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url')

/** `Set-Cookie` for a new browser binding: HttpOnly, SameSite=Lax (it must come back on the provider's redirect). */
function browserCookie(value: string, baseUrl: string): string {
  const secure = baseUrl.startsWith('https:') ? '; Secure' : ''
  return `${BROWSER_COOKIE}=${value}; Max-Age=${STATE_TTL_SECONDS}; Path=/api/auth/oidc; HttpOnly; SameSite=Lax${secure}`
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const index = part.indexOf('=')
    if (index > 0 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim()
  }
  return undefined
}

/** An authorization URL and the `Set-Cookie` header that binds it to the browser. */
export interface Authorization {
  url: string
  cookie: string
}

/** A redirect target is the app's: same origin as APP_URL, and under its path. */
function isUnderAppUrl(candidate: string, appUrl: string): boolean {
  let url: URL
  let app: URL
  try {
    url = new URL(candidate)
    app = new URL(appUrl)
  } catch {
    return false
  }
  if (url.origin !== app.origin || url.username || url.password) return false
  const base = app.pathname.endsWith('/') ? app.pathname : `${app.pathname}/`
  return url.pathname === app.pathname || url.pathname.startsWith(base) || app.pathname === '/'
}

export function createOidcService({ db, config }: AppDeps) {
  const box = secretBoxFor(config.secrets)
  const redirectUri = `${config.baseUrl}${CALLBACK_PATH}`

  function present(row: NonNullable<Awaited<ReturnType<typeof providerOf>>>): OidcSettings {
    return {
      issuer: row.issuer,
      client_id: row.client_id,
      client_secret_set: row.client_secret !== '',
      scopes: row.scopes,
      username_claim: row.username_claim,
      email_claim: row.email_claim,
      provisioning: row.provisioning,
      default_role_id: row.default_role_id,
      allowed_email_domains: row.allowed_email_domains,
      password_login: row.password_login,
      link_by_verified_email: row.link_by_verified_email,
      mfa_amr_values: row.mfa_amr_values,
      mfa_acr_values: row.mfa_acr_values,
      redirect_uri: redirectUri,
      created_at: row.created_at,
      updated_at: row.updated_at,
    }
  }

  async function getSettings(actor: Actor): Promise<OidcSettings> {
    requirePermission(actor, 'tenant.administrate')
    const row = await providerOf(db, actor.tenantId)
    if (!row) throw notFound('OIDC provider')
    return present(row)
  }

  /** Saves the tenant's provider after fetching its discovery document; 422 naming the field otherwise. */
  async function putSettings(actor: Actor, body: OidcSettingsBody): Promise<OidcSettings> {
    requirePermission(actor, 'tenant.administrate')
    const before = await providerOf(db, actor.tenantId)
    const problems = new FieldErrorCollector()
    const secret = body.client_secret ?? (before ? box.open(before.client_secret) : undefined)
    if (secret === undefined) problems.add('client_secret', 'is required when no secret is stored yet')
    const provisioning = body.provisioning ?? before?.provisioning ?? 'off'
    const defaultRoleId = body.default_role_id !== undefined ? body.default_role_id : (before?.default_role_id ?? null)
    if (defaultRoleId !== null) {
      const role = await db
        .selectFrom('roles')
        .select('permissions')
        .where('tenant_id', '=', actor.tenantId)
        .where('id', '=', defaultRoleId)
        .executeTakeFirst()
      if (!role) problems.add('default_role_id', 'is not a role of this tenant')
      // no one grants what they do not hold (issue 33): every provisioned user would get this role
      else if (body.default_role_id !== undefined) assertHoldsEvery(actor, role.permissions, 'default_role_id')
    } else if (provisioning === 'create') problems.add('default_role_id', 'is required when provisioning is "create"')
    const scopes = body.scopes ?? before?.scopes ?? 'openid profile email'
    if (!scopes.split(/\s+/).includes('openid')) problems.add('scopes', 'must include "openid"')
    problems.throwIfAny()
    const issuer = body.issuer
    try {
      await discoverProvider(config, { issuer, client_id: body.client_id, client_secret: secret! })
    } catch (error) {
      const reason = isUnavailable(error) ? (error instanceof Error ? error.message : String(error)) : describe(error)
      throw invalid(
        { issuer: [`discovery failed: ${reason}`] },
        "The issuer's discovery document could not be used",
        'oidc_discovery_failed',
      )
    }
    const values = {
      issuer,
      client_id: body.client_id,
      client_secret: box.seal(secret!),
      scopes,
      username_claim: body.username_claim ?? before?.username_claim ?? 'preferred_username',
      email_claim: body.email_claim !== undefined ? body.email_claim : (before?.email_claim ?? 'email'),
      provisioning,
      default_role_id: defaultRoleId,
      allowed_email_domains: (body.allowed_email_domains ?? before?.allowed_email_domains ?? []).map((d) =>
        d.toLowerCase(),
      ),
      password_login: body.password_login ?? before?.password_login ?? true,
      link_by_verified_email: body.link_by_verified_email ?? before?.link_by_verified_email ?? false,
      mfa_amr_values: body.mfa_amr_values ?? before?.mfa_amr_values ?? DEFAULT_MFA_AMR_VALUES,
      mfa_acr_values: body.mfa_acr_values ?? before?.mfa_acr_values ?? [],
    }
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('oidc_providers')
        .values({ tenant_id: actor.tenantId, ...values })
        .onConflict((oc) => oc.column('tenant_id').doUpdateSet({ ...values, updated_at: new Date().toISOString() }))
        .execute()
      const { client_secret: _secret, ...recorded } = values
      const { client_secret: _old, ...previous } = before ?? {}
      await recordAudit(trx, {
        tenantId: actor.tenantId,
        action: before ? 'oidc.update' : 'oidc.create',
        targetType: 'oidc_provider',
        targetId: actor.tenantId,
        changes: {
          ...diff(before ? previous : undefined, recorded),
          ...(body.client_secret !== undefined ? { client_secret_changed: true } : {}),
        },
      })
    })
    return getSettings(actor)
  }

  async function deleteSettings(actor: Actor): Promise<void> {
    requirePermission(actor, 'tenant.administrate')
    await db.transaction().execute(async (trx) => {
      const deleted = await trx.deleteFrom('oidc_providers').where('tenant_id', '=', actor.tenantId).executeTakeFirst()
      if (deleted.numDeletedRows === 0n) throw notFound('OIDC provider')
      await recordAudit(trx, {
        tenantId: actor.tenantId,
        action: 'oidc.delete',
        targetType: 'oidc_provider',
        targetId: actor.tenantId,
      })
    })
  }

  // discovery documents per tenant and settings version, for DISCOVERY_TTL_MS (issue 39: not one
  // outbound fetch per anonymous /start); a failed discovery is not kept
  const discovered = new Map<string, { at: number; configuration: Promise<client.Configuration> }>()

  async function configurationFor(provider: NonNullable<Awaited<ReturnType<typeof providerOf>>>) {
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
    const tenant = await db.selectFrom('tenants').select('id').where('slug', '=', slug.toLowerCase()).executeTakeFirst()
    const provider = tenant && (await providerOf(db, tenant.id))
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
    const provider = await providerOf(db, actor.tenantId)
    if (!provider) throw notFound('Single sign-on for this tenant')
    const user = await db
      .selectFrom('users')
      .select('password_hash')
      .where('tenant_id', '=', actor.tenantId)
      .where('id', '=', actor.userId)
      .executeTakeFirstOrThrow()
    if (!(await verifyPassword(user.password_hash, body.password)))
      throw invalid({ password: ['is wrong'] }, 'The password is wrong', 'invalid_password')
    await proveSecondFactor(db, config, actor.tenantId, actor.userId, body.totp)
    return authorizationUrl(actor.tenantId, provider, body.redirect_uri, actor.userId)
  }

  /** An administrator links an identity (the provider's `sub`) to a user holding no more than they do. */
  async function adminLink(actor: Actor, userId: number, body: AdminLinkBody): Promise<void> {
    requirePermission(actor, 'users.administrate')
    const user = await db
      .selectFrom('users as u')
      .innerJoin('roles as r', (join) => join.onRef('r.id', '=', 'u.role_id').onRef('r.tenant_id', '=', 'u.tenant_id'))
      .select(['u.id', 'r.permissions'])
      .where('u.tenant_id', '=', actor.tenantId)
      .where('u.id', '=', userId)
      .where('u.deleted_at', 'is', null)
      .executeTakeFirst()
    if (!user) throw notFound('User')
    // whoever links an identity can sign in as that user: only for users holding no more than the actor
    assertHoldsEvery(actor, user.permissions, 'subject', 'belongs to a user holding permissions you do not hold')
    const provider = await providerOf(db, actor.tenantId)
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
      await sql`select pg_advisory_xact_lock(hashtextextended(${`oidc-start:${tenantId}/${ip}`}, 0))`.execute(trx)
      const recent = await trx
        .selectFrom('auth_tickets')
        .select(sql<number>`count(*)::int`.as('starts'))
        .where('tenant_id', '=', tenantId)
        .where('kind', '=', 'oidc_state')
        .where(sql<boolean>`data->>'ip' = ${ip}`)
        .where(sql<boolean>`created_at > now() - interval '1 minute'`)
        .executeTakeFirstOrThrow()
      if (recent.starts >= STARTS_PER_MINUTE)
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
    const provider = await providerOf(db, tenantId)
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

  return { getSettings, putSettings, deleteSettings, start, startLink, adminLink, callback }
}
export type OidcService = ReturnType<typeof createOidcService>

const safeEqual = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error).slice(0, 300)
  const code =
    'error' in error && typeof error.error === 'string' ? error.error : 'code' in error ? error.code : undefined
  return `${typeof code === 'string' ? `${code}: ` : ''}${error.message}`.slice(0, 300)
}

const claimText = (claims: Record<string, unknown>, name: string | null): string | undefined => {
  if (!name) return undefined
  const value = claims[name]
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined
}

const USERNAME = new RegExp(USERNAME_PATTERN)
const EMAIL = /^[^\s@<>"']+@[^\s@<>"']+\.[^\s@<>"']+$/

/** Whether the ID token shows that the provider did multi-factor authentication (tenant's `amr`/`acr` values). */
export function providerDidMfa(
  provider: { mfa_amr_values: string[]; mfa_acr_values: string[] },
  claims: Record<string, unknown>,
): boolean {
  const amr = Array.isArray(claims.amr) ? claims.amr.filter((v): v is string => typeof v === 'string') : []
  const acr = typeof claims.acr === 'string' ? claims.acr : undefined
  return (
    amr.some((value) => provider.mfa_amr_values.includes(value)) ||
    (acr !== undefined && provider.mfa_acr_values.includes(acr))
  )
}

type ProviderRow = NonNullable<Awaited<ReturnType<typeof providerOf>>>

/** Stores the link (issuer, sub) → user and audits it; 409 when the identity is linked to someone else. */
export async function linkIdentity(
  db: Db,
  tenantId: number,
  userId: number,
  identity: { issuer: string; subject: string },
  how: 'verified_email' | 'session' | 'administrator',
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto('oidc_identities')
      .values({ tenant_id: tenantId, user_id: userId, issuer: identity.issuer, subject: identity.subject })
      .onConflict((oc) => oc.columns(['tenant_id', 'issuer', 'subject']).doNothing())
      .returning('user_id')
      .executeTakeFirst()
    if (!inserted) {
      const owner = await trx
        .selectFrom('oidc_identities')
        .select('user_id')
        .where('tenant_id', '=', tenantId)
        .where('issuer', '=', identity.issuer)
        .where('subject', '=', identity.subject)
        .executeTakeFirst()
      if (owner?.user_id === userId) return
      throw conflict('oidc_identity_taken', 'This identity of the provider is linked to another account')
    }
    await recordAudit(trx, {
      tenantId,
      action: 'oidc.link',
      targetType: 'user',
      targetId: userId,
      changes: { issuer: identity.issuer, subject: identity.subject, how },
    })
  })
}

/**
 * The user of an ID token: by the stored link (issuer, sub). A first sign-in never links by
 * username or by an unverified email (issue 39): it links the one local account with the same email
 * only when the tenant allows it (`link_by_verified_email`) and the token says `email_verified: true`.
 * An identity whose name or email is an existing account's otherwise gets 403 `sso_link_required`
 * (the person links from a signed-in session, or an administrator links). Else, with provisioning on,
 * a new user is created under the rules of `POST /api/users` (and its users quota: 403 `quota_exceeded`,
 * nothing created); else 403 `sso_user_unknown`. Deleted, blacked-out and inactive users are refused.
 */
async function findOrProvisionUser(
  db: Db,
  tenantId: number,
  provider: ProviderRow,
  claims: Record<string, unknown>,
  quotas: QuotaLimits,
): Promise<number> {
  const subject = String(claims.sub)
  const issuer = String(claims.iss)
  const refuse = async (reason: string, code: string, message: string, userId: number | null = null) => {
    await recordFailedSignIn(db, tenantId, userId, { method: 'sso', reason })
    return new AppError(403, code, message)
  }
  const eligible = async (userId: number) => {
    if (!(await signInEligibleUser(db, tenantId, userId)))
      throw await refuse('user_disabled', 'sso_user_disabled', 'This account is disabled', userId)
    return userId
  }
  const linked = await db
    .selectFrom('oidc_identities')
    .select('user_id')
    .where('tenant_id', '=', tenantId)
    .where('issuer', '=', issuer)
    .where('subject', '=', subject)
    .executeTakeFirst()
  if (linked) return eligible(linked.user_id)

  const username = claimText(claims, provider.username_claim)
  const email = claimText(claims, provider.email_claim)?.toLowerCase()
  const emailVerified = claims.email_verified === true
  if (provider.link_by_verified_email && email && emailVerified) {
    const sameEmail = await db
      .selectFrom('users')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where(sql<boolean>`lower(email) = ${email}`)
      .where('deleted_at', 'is', null)
      .limit(2)
      .execute()
    if (sameEmail.length === 1) {
      const userId = await eligible(sameEmail[0]!.id)
      await linkIdentity(db, tenantId, userId, { issuer, subject }, 'verified_email')
      return userId
    }
  }
  const names = [username, email].filter((n): n is string => n !== undefined).map((n) => n.toLowerCase())
  const taken =
    names.length > 0 &&
    (await db
      .selectFrom('users')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where((eb) =>
        eb.or([
          eb(sql<string>`lower(username)`, 'in', names),
          ...(email ? [eb(sql<string>`lower(email)`, '=', email)] : []),
        ]),
      )
      .executeTakeFirst())
  if (taken)
    throw await refuse(
      'link_required',
      'sso_link_required',
      'An account of this tenant has this name or email, but the identity is not linked to it: sign in to that ' +
        'account and link the identity, or ask an administrator to link it',
    )
  if (provider.provisioning !== 'create' || provider.default_role_id === null)
    throw await refuse('unknown_user', 'sso_user_unknown', 'No account of this tenant matches this identity')
  const domain = email?.split('@')[1]
  if (provider.allowed_email_domains.length > 0 && (!domain || !provider.allowed_email_domains.includes(domain)))
    throw await refuse(
      'email_domain_not_allowed',
      'sso_user_unknown',
      'No account of this tenant matches this identity, and its email domain may not be provisioned',
    )
  const newUsername = username ?? email
  if (!newUsername)
    throw await refuse(
      'no_username_claim',
      'sso_user_unknown',
      'The identity has neither a username nor an email claim',
    )
  // the rules of POST /api/users (users.schemas.ts): a name the API would refuse is not provisioned either
  const problems: string[] = []
  if (newUsername.length < 3 || newUsername.length > 255 || !USERNAME.test(newUsername)) problems.push('username')
  if (email !== undefined && (email.length > 255 || !EMAIL.test(email))) problems.push('email')
  const firstName = claimText(claims, 'given_name') ?? ''
  const lastName = claimText(claims, 'family_name') ?? ''
  if (firstName.length > 255) problems.push('first_name')
  if (lastName.length > 255) problems.push('last_name')
  if (problems.length > 0)
    throw await refuse(
      `invalid_claims:${problems.join(',')}`,
      'sso_provisioning_refused',
      `The identity cannot become an account of this tenant: its ${problems.join(', ')} would be refused by POST /api/users`,
    )
  const roleId = provider.default_role_id
  const provision = db.transaction().execute(async (trx) => {
    await assertQuota(trx, tenantId, 'users', quotas)
    const created = await insertUser(trx, {
      tenant_id: tenantId,
      username: newUsername,
      password_hash: UNUSABLE_PASSWORD_HASH,
      first_name: firstName,
      last_name: lastName,
      email: email ?? null,
      role_id: roleId,
      lang_id: null,
      profile_picture: null,
      street: null,
      zipcode: null,
      city: null,
      phone: null,
      gender: null,
      staff_number: null,
      default_route: null,
    })
    await trx
      .insertInto('oidc_identities')
      .values({ tenant_id: tenantId, user_id: created.id, issuer, subject })
      .execute()
    await recordAudit(trx, {
      tenantId,
      action: 'user.provision',
      targetType: 'user',
      targetId: created.id,
      changes: { username: [null, newUsername], role_id: [null, roleId], issuer, subject },
    })
    return created.id
  })
  return provision.catch(async (error: unknown) => {
    if (!(error instanceof AppError) || error.code !== 'quota_exceeded') throw error
    // rolled back: no user, no identity, no audit of a provisioning; the refused sign-in is recorded like any other
    await recordFailedSignIn(db, tenantId, null, { method: 'sso', reason: 'quota_exceeded:users' })
    const { used, limit } = error.extensions ?? {}
    throw new AppError(
      error.status,
      error.code,
      `No account can be created for this identity: your organisation has reached its users quota (${used} of ${limit}). ` +
        'Ask an administrator of your organisation',
      error.errors,
      undefined,
      error.extensions,
    )
  })
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

export async function oidcRoutes(app: FastifyInstance, { oidc }: { oidc: OidcService }): Promise<void> {
  const admin = ['administration']
  app.get(
    '/api/administration/oidc',
    {
      schema: {
        tags: admin,
        summary: "The tenant's OpenID Connect provider (permission tenant.administrate)",
        response: { 200: OidcSettingsSchema, ...errorResponses },
      },
    },
    (request) => oidc.getSettings(request.actor),
  )
  app.put<{ Body: OidcSettingsBody }>(
    '/api/administration/oidc',
    {
      schema: {
        tags: admin,
        summary: "Set the tenant's OpenID Connect provider (its discovery document is fetched; 422 when it cannot be)",
        body: OidcSettingsBodySchema,
        response: { 200: OidcSettingsSchema, ...errorResponses },
      },
    },
    (request) => oidc.putSettings(request.actor, request.body),
  )
  app.delete(
    '/api/administration/oidc',
    {
      schema: {
        tags: admin,
        summary: "Remove the tenant's OpenID Connect provider",
        response: { 204: Type.Null(), ...errorResponses },
      },
    },
    async (request, reply) => {
      await oidc.deleteSettings(request.actor)
      return reply.code(204).send()
    },
  )

  app.post<{ Body: LinkBody }>(
    '/api/users/current/oidc-link',
    {
      schema: {
        tags: ['auth'],
        summary:
          "Link an identity of the tenant's provider to your account: proves password (and TOTP), answers the provider's URL",
        body: LinkBodySchema,
        response: { 200: LinkAnswerSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { url, cookie } = await oidc.startLink(request.actor, request.body)
      return reply.header('set-cookie', cookie).send({ authorization_url: url })
    },
  )
  app.put<{ Params: Static<typeof UserParamsSchema>; Body: AdminLinkBody }>(
    '/api/users/:id/oidc-identity',
    {
      schema: {
        tags: ['administration'],
        summary:
          "Link an identity (the provider's `sub`) to a user (users.administrate, and every permission the user holds)",
        params: UserParamsSchema,
        body: AdminLinkBodySchema,
        response: { 204: Type.Null(), ...errorResponses },
      },
    },
    async (request, reply) => {
      await oidc.adminLink(request.actor, request.params.id, request.body)
      return reply.code(204).send()
    },
  )

  app.get<{ Params: StartParams; Querystring: StartQuery }>(
    '/api/auth/oidc/:tenant/start',
    {
      config: { public: true },
      schema: {
        tags: ['auth'],
        summary: "Start single sign-on: 302 to the tenant's identity provider",
        security: [],
        params: StartParamsSchema,
        querystring: StartQuerySchema,
        response: { 302: RedirectSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { url, cookie } = await oidc.start(request.params.tenant, request.query.redirect_uri)
      return reply.header('set-cookie', cookie).header('cache-control', 'no-store').redirect(url, 302)
    },
  )

  app.get<{ Querystring: CallbackQuery }>(
    CALLBACK_PATH,
    {
      config: { public: true },
      schema: {
        tags: ['auth'],
        summary:
          'The identity provider redirects here; checks the browser cookie of /start, 302 to the app with `#login_code=…` (60 s, one use)',
        security: [],
        querystring: CallbackQuerySchema,
        response: { 302: RedirectSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const location = await oidc.callback(request.query, request.headers.cookie)
      // the binding is spent: the cookie goes
      return reply
        .header('set-cookie', `${BROWSER_COOKIE}=; Max-Age=0; Path=/api/auth/oidc; HttpOnly; SameSite=Lax`)
        .header('cache-control', 'no-store')
        .redirect(location, 302)
    },
  )
}

/** `workplace secrets rotate`: re-seals the providers' client secrets under the current key. */
export const oidcSecrets: SecretHolder = {
  name: 'oidc_providers',
  async reseal(db, box, scope = {}) {
    const rows = await db
      .selectFrom('oidc_providers')
      .select(['tenant_id', 'client_secret'])
      .$if(scope.tenantId !== undefined, (q) => q.where('tenant_id', '=', scope.tenantId!))
      .execute()
    let changed = 0
    for (const row of rows) {
      if (isSealed(row.client_secret) && !box.needsResealing(row.client_secret)) continue
      await db
        .updateTable('oidc_providers')
        .set({ client_secret: box.seal(box.open(row.client_secret)) })
        .where('tenant_id', '=', row.tenant_id)
        .execute()
      changed++
    }
    return changed
  },
}
