import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { Type, type Static } from 'typebox'
import type { Config } from '../../config.js'
import type { AppDeps } from '../../platform/app-module.js'
import { diff, recordAudit } from '../../platform/audit/audit-log.js'
import type { Actor } from '../../platform/auth/actor.js'
import { UNUSABLE_PASSWORD_HASH } from '../../platform/auth/passwords.js'
import { can } from '../../platform/auth/permissions.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import type { Db } from '../../platform/db/schema.js'
import { AppError, FieldErrorCollector, invalid, notFound } from '../../platform/http/errors.js'
import { errorResponses, IdSchema, Nullable, TimestampSchema } from '../../platform/http/schemas.js'
import { isSealed, secretBoxFor, type SecretHolder } from '../../platform/secrets/secret-box.js'
import { insertUser } from '../users/index.js'
import { client, discoverProvider, isUnavailable } from './oidc-client.js'
import { completeSignIn, recordFailedSignIn, signInEligibleUser } from './sign-in.js'
import { consumeTicket, issueTicket } from './tickets.js'

/** An authorization request (its `state`) must come back within this long, once. */
const STATE_TTL_SECONDS = 10 * 60
/** The `login_code` handed to the app after the callback: once, within this long. */
export const LOGIN_CODE_TTL_SECONDS = 60
const CALLBACK_PATH = '/api/auth/oidc/callback'

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
    description: 'where the app receives `?login_code=…`: a URL under APP_URL',
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

/** `?login_code=…` (or another parameter) added to the app's redirect URI. */
function withParameter(uri: string, name: string, value: string): string {
  const url = new URL(uri)
  url.searchParams.set(name, value)
  return url.toString()
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
      else if (body.default_role_id !== undefined && !role.permissions.every((p) => can(actor, p)))
        throw new AppError(403, 'exceeds_own_permissions', 'The default role holds permissions you do not hold', {
          default_role_id: ['holds permissions you do not hold'],
        })
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

  async function configurationFor(provider: NonNullable<Awaited<ReturnType<typeof providerOf>>>) {
    try {
      return await discoverProvider(config, {
        issuer: provider.issuer,
        client_id: provider.client_id,
        client_secret: box.open(provider.client_secret),
      })
    } catch (error) {
      throw unavailable(error)
    }
  }

  /** Redirect URL to the provider's authorization endpoint (code flow, PKCE S256, state, nonce). */
  async function start(slug: string, appRedirect: string): Promise<string> {
    if (!isUnderAppUrl(appRedirect, config.appUrl))
      throw invalid({ redirect_uri: [`must be a URL under ${config.appUrl}`] })
    const tenant = await db.selectFrom('tenants').select('id').where('slug', '=', slug.toLowerCase()).executeTakeFirst()
    const provider = tenant && (await providerOf(db, tenant.id))
    if (!tenant || !provider) throw notFound('Single sign-on for this tenant')
    const configuration = await configurationFor(provider)
    const verifier = client.randomPKCECodeVerifier()
    const nonce = client.randomNonce()
    const state = await issueTicket(db, {
      tenantId: tenant.id,
      kind: 'oidc_state',
      userId: null,
      ttlSeconds: STATE_TTL_SECONDS,
      data: { nonce, verifier: box.seal(verifier), redirect_uri: appRedirect },
    })
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      scope: provider.scopes,
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })
    return url.toString()
  }

  /**
   * The provider's redirect back: checks state (once, 10 minutes), exchanges the code (PKCE), checks
   * the ID token (signature, issuer, audience, expiry, nonce), finds or links or provisions the user,
   * and redirects to the app with a one-time `login_code`.
   */
  async function callback(query: CallbackQuery): Promise<string> {
    if (!query.state) throw new AppError(400, 'oidc_invalid_state', 'The state parameter is missing')
    const ticket = await consumeTicket(db, 'oidc_state', query.state)
    if (!ticket)
      throw new AppError(400, 'oidc_invalid_state', 'The state is unknown, expired or was already used: sign in again')
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
    const userId = await findOrProvisionUser(db, tenantId, provider, claims)
    const code = await issueTicket(db, {
      tenantId,
      kind: 'login_code',
      userId,
      ttlSeconds: LOGIN_CODE_TTL_SECONDS,
    })
    return withParameter(appRedirect, 'login_code', code)
  }

  return { getSettings, putSettings, deleteSettings, start, callback }
}
export type OidcService = ReturnType<typeof createOidcService>

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

/**
 * The user of an ID token: by the stored link (issuer, sub); else, on a first sign-in, by the
 * username claim (and linked); else created when provisioning is on (allowed email domain, default
 * role); else 403 `sso_user_unknown`. Deleted, blacked-out and inactive users are refused.
 */
async function findOrProvisionUser(
  db: Db,
  tenantId: number,
  provider: {
    issuer: string
    username_claim: string
    email_claim: string | null
    provisioning: 'off' | 'create'
    default_role_id: number | null
    allowed_email_domains: string[]
  },
  claims: Record<string, unknown>,
): Promise<number> {
  const subject = String(claims.sub)
  const issuer = String(claims.iss)
  const refuse = async (reason: string, code: string, message: string, userId: number | null = null) => {
    await recordFailedSignIn(db, tenantId, userId, { method: 'sso', reason })
    return new AppError(403, code, message)
  }
  const linked = await db
    .selectFrom('oidc_identities')
    .select('user_id')
    .where('tenant_id', '=', tenantId)
    .where('issuer', '=', issuer)
    .where('subject', '=', subject)
    .executeTakeFirst()
  if (linked) {
    if (!(await signInEligibleUser(db, tenantId, linked.user_id)))
      throw await refuse('user_disabled', 'sso_user_disabled', 'This account is disabled', linked.user_id)
    return linked.user_id
  }
  const username = claimText(claims, provider.username_claim)
  const existing =
    username &&
    (await db
      .selectFrom('users')
      .select(['id'])
      .where('tenant_id', '=', tenantId)
      .where(sql<boolean>`lower(username) = ${username.toLowerCase()}`)
      .executeTakeFirst())
  if (existing) {
    if (!(await signInEligibleUser(db, tenantId, existing.id)))
      throw await refuse('user_disabled', 'sso_user_disabled', 'This account is disabled', existing.id)
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('oidc_identities')
        .values({ tenant_id: tenantId, user_id: existing.id, issuer, subject })
        .onConflict((oc) => oc.columns(['tenant_id', 'issuer', 'subject']).doNothing())
        .execute()
      await recordAudit(trx, {
        tenantId,
        action: 'oidc.link',
        targetType: 'user',
        targetId: existing.id,
        changes: { issuer, subject },
      })
    })
    return existing.id
  }
  const email = claimText(claims, provider.email_claim)
  if (provider.provisioning !== 'create' || provider.default_role_id === null)
    throw await refuse('unknown_user', 'sso_user_unknown', 'No account of this tenant matches this identity')
  const domain = email?.split('@')[1]?.toLowerCase()
  if (provider.allowed_email_domains.length > 0 && (!domain || !provider.allowed_email_domains.includes(domain)))
    throw await refuse(
      'email_domain_not_allowed',
      'sso_user_unknown',
      'No account of this tenant matches this identity, and its email domain may not be provisioned',
    )
  const newUsername = (username ?? email)?.slice(0, 255)
  if (!newUsername)
    throw await refuse(
      'no_username_claim',
      'sso_user_unknown',
      'The identity has neither a username nor an email claim',
    )
  const roleId = provider.default_role_id
  return db.transaction().execute(async (trx) => {
    const created = await insertUser(trx, {
      tenant_id: tenantId,
      username: newUsername,
      password_hash: UNUSABLE_PASSWORD_HASH,
      first_name: claimText(claims, 'given_name') ?? '',
      last_name: claimText(claims, 'family_name') ?? '',
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
}

/** `POST /api/auth/login {login_code}`: the token for the user the SSO callback identified. */
export async function exchangeLoginCode(db: Db, config: Config, code: string, deviceName: string | undefined) {
  const ticket = await consumeTicket(db, 'login_code', code)
  if (!ticket || ticket.userId === null)
    throw new AppError(401, 'invalid_login_code', 'The login code is invalid, used or expired: sign in again')
  if (!(await signInEligibleUser(db, ticket.tenantId, ticket.userId))) {
    await recordFailedSignIn(db, ticket.tenantId, ticket.userId, { method: 'sso', reason: 'user_disabled' })
    throw new AppError(403, 'sso_user_disabled', 'This account is disabled')
  }
  return completeSignIn(db, config, {
    tenantId: ticket.tenantId,
    userId: ticket.userId,
    method: 'sso',
    deviceName: deviceName ?? null,
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
    async (request, reply) => reply.redirect(await oidc.start(request.params.tenant, request.query.redirect_uri), 302),
  )

  app.get<{ Querystring: CallbackQuery }>(
    CALLBACK_PATH,
    {
      config: { public: true },
      schema: {
        tags: ['auth'],
        summary: 'The identity provider redirects here; 302 to the app with `?login_code=…` (60 s, one use)',
        security: [],
        querystring: CallbackQuerySchema,
        response: { 302: RedirectSchema, ...errorResponses },
      },
    },
    async (request, reply) => reply.redirect(await oidc.callback(request.query), 302),
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
