import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { burnPasswordCheck, verifyPassword } from '../../platform/auth/passwords.js'
import { revokeAccessToken } from '../../platform/auth/tokens.js'
import type { Db } from '../../platform/db/schema.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { AppError } from '../../platform/http/errors.js'
import type { LoginBody, PasswordLoginBody } from './login.schemas.js'
import * as queries from './login.queries.js'
import { findPasswordLogin } from './oidc.queries.js'
import { exchangeLoginCode } from './oidc.service.js'
import { completeMfaSignIn } from './second-factor.service.js'
import { findTenantBySlug } from './sign-in.queries.js'
import { completeSignIn, recordFailedSignIn, secondFactorGate } from './sign-in.service.js'

const invalidCredentials = () => new AppError(401, 'invalid_credentials', 'The tenant, username or password is wrong')

export type LoginService = ReturnType<typeof createLoginService>

export function createLoginService({ db, config }: AppDeps) {
  const { loginMaxFailures, loginWindowSeconds } = config.auth

  /**
   * Counts a sign-in attempt before the password is checked (issue 39): under a lock on the
   * tenant+username (a transaction advisory lock, one for the whole fleet), refuses with 429 when the
   * window is full, else records the attempt as a failure. A correct password clears the record; so
   * of a burst at most `loginMaxFailures` passwords are ever checked, and a correct one after them is
   * refused too.
   */
  async function reserveAttempt(slug: string, username: string): Promise<void> {
    const wait = await db.transaction().execute(async (trx) => {
      await queries.lockLoginAttempts(trx, slug, username)
      const seconds = await throttleSeconds(trx, slug, username)
      if (seconds === 0) await queries.insertLoginFailure(trx, slug, username)
      return seconds
    })
    if (wait > 0)
      throw new AppError(429, 'too_many_attempts', 'Too many failed logins; try again later', undefined, {
        'Retry-After': String(wait),
      })
  }

  /** Seconds until a throttled tenant+username may try again; 0 when not throttled. */
  async function throttleSeconds(db: Db, slug: string, username: string): Promise<number> {
    const row = await queries.countLoginFailures(db, slug, username, loginWindowSeconds)
    if (row.failures < loginMaxFailures) return 0
    // the window slides: retry when the oldest failure that still counts has aged out
    const oldestCounted = await queries.findFailureRetry(db, slug, username, loginWindowSeconds, loginMaxFailures)
    return Math.max(1, oldestCounted?.retry ?? row.retry)
  }

  /** Whether the tenant allows password sign-in (no provider, or one with `password_login`). */
  const passwordLoginAllowed = async (tenantId: number) => (await findPasswordLogin(db, tenantId)) ?? true

  /** Signs in with a password, an SSO login code, or an MFA token and its second factor. */
  async function login(body: LoginBody) {
    if ('login_code' in body) return exchangeLoginCode(db, config, body.login_code, body.device_name)
    if ('mfa_token' in body) return completeMfaSignIn(db, config, body)
    return passwordLogin(body)
  }

  /** Exchanges tenant, username and password for an access token; one message for every failure. */
  async function passwordLogin(body: PasswordLoginBody) {
    const slug = body.tenant.toLowerCase()
    const username = body.username.toLowerCase()
    await reserveAttempt(slug, username)

    // the tenant first, so that the user lookup names its tenant (routed to one shard on Citus, docs/citus.md)
    const tenant = await findTenantBySlug(db, slug)
    const user = tenant && (await queries.findPasswordUser(db, tenant.id, username))
    const passwordOk = user
      ? await verifyPassword(user.password_hash, body.password)
      : (await burnPasswordCheck(body.password), false)
    if (!user || !passwordOk || !user.active || user.deleted_at !== null) {
      // the attempt is already recorded as a failure (reserveAttempt)
      if (tenant)
        await recordFailedSignIn(db, tenant.id, user?.id ?? null, {
          method: 'password',
          reason: !user ? 'unknown_user' : !passwordOk ? 'wrong_password' : 'inactive_user',
          login: username,
        })
      throw invalidCredentials()
    }
    await queries.deleteLoginFailures(db, slug, username)
    // a tenant signing in through its identity provider keeps password sign-in for `*` holders only (break-glass)
    if (!user.permissions.includes('*') && !(await passwordLoginAllowed(user.tenant_id))) {
      await recordFailedSignIn(db, user.tenant_id, user.id, { method: 'password', reason: 'password_login_disabled' })
      throw new AppError(
        403,
        'password_login_disabled',
        'This tenant signs in through its identity provider; password sign-in is disabled',
      )
    }
    const gate = await secondFactorGate(db, user.tenant_id, user.id, user.requires_mfa, body.device_name)
    return completeSignIn(db, config, {
      tenantId: user.tenant_id,
      userId: user.id,
      method: 'password',
      deviceName: body.device_name,
      mfaEnrollmentOnly: gate.mfaEnrollmentOnly,
    })
  }

  /** Revokes the token of the current request. */
  async function logout(actor: Actor): Promise<void> {
    await db.transaction().execute(async (trx) => {
      await revokeAccessToken(trx, actor.tenantId, actor.tokenId)
      await recordDomainEvent(trx, {
        type: 'auth.signedOut',
        tenantId: actor.tenantId,
        actorId: actor.userId,
        subjectType: 'session',
        subjectId: actor.tokenId,
      })
    })
  }

  return { login, logout }
}
