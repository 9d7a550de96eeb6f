import { sql } from 'kysely'
import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { recordAudit } from '../../platform/audit/audit-log.js'
import { burnPasswordCheck, verifyPassword } from '../../platform/auth/passwords.js'
import { revokeAccessToken } from '../../platform/auth/tokens.js'
import type { Db } from '../../platform/db/schema.js'
import { AppError } from '../../platform/http/errors.js'
import {
  completeMfaSignIn,
  completeSignIn,
  exchangeLoginCode,
  passwordLoginAllowed,
  recordFailedSignIn,
  secondFactorGate,
} from '../identity/index.js'
import type { LoginBody, PasswordLoginBody } from './auth.schemas.js'

const invalidCredentials = () => new AppError(401, 'invalid_credentials', 'The tenant, username or password is wrong')

export type AuthService = ReturnType<typeof createAuthService>

export function createAuthService({ db, config }: AppDeps) {
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
      await sql`select pg_advisory_xact_lock(hashtextextended(${`login:${slug}/${username}`}, 0))`.execute(trx)
      const seconds = await throttleSeconds(trx, slug, username)
      if (seconds === 0) await trx.insertInto('login_failures').values({ tenant_slug: slug, username }).execute()
      return seconds
    })
    if (wait > 0)
      throw new AppError(429, 'too_many_attempts', 'Too many failed logins; try again later', undefined, {
        'Retry-After': String(wait),
      })
  }

  /** Seconds until a throttled tenant+username may try again; 0 when not throttled. */
  async function throttleSeconds(db: Db, slug: string, username: string): Promise<number> {
    const row = await db
      .selectFrom('login_failures')
      .select([
        sql<number>`count(*)::int`.as('failures'),
        sql<number>`ceil(extract(epoch from min(attempted_at) + make_interval(secs => ${loginWindowSeconds}) - now()))::int`.as(
          'retry',
        ),
      ])
      .where('tenant_slug', '=', slug)
      .where('username', '=', username)
      .where(sql<boolean>`attempted_at > now() - make_interval(secs => ${loginWindowSeconds})`)
      .executeTakeFirstOrThrow()
    if (row.failures < loginMaxFailures) return 0
    // the window slides: retry when the oldest failure that still counts has aged out
    const oldestCounted = await db
      .selectFrom('login_failures')
      .select(
        sql<number>`ceil(extract(epoch from attempted_at + make_interval(secs => ${loginWindowSeconds}) - now()))::int`.as(
          'retry',
        ),
      )
      .where('tenant_slug', '=', slug)
      .where('username', '=', username)
      .where(sql<boolean>`attempted_at > now() - make_interval(secs => ${loginWindowSeconds})`)
      .orderBy('attempted_at', 'desc')
      .offset(loginMaxFailures - 1)
      .limit(1)
      .executeTakeFirst()
    return Math.max(1, oldestCounted?.retry ?? row.retry)
  }

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
    const tenant = await db.selectFrom('tenants').select(['id']).where('slug', '=', slug).executeTakeFirst()
    const user =
      tenant &&
      (await db
        .selectFrom('users as u')
        .innerJoin('roles as r', (join) =>
          join.onRef('r.id', '=', 'u.role_id').onRef('r.tenant_id', '=', 'u.tenant_id'),
        )
        .select([
          'u.id',
          'u.tenant_id',
          'u.password_hash',
          'u.active',
          'u.deleted_at',
          'r.permissions',
          'r.requires_mfa',
        ])
        .where('u.tenant_id', '=', tenant.id)
        .where(sql<boolean>`lower(u.username) = ${username}`)
        .where('u.blacked_out_at', 'is', null)
        .executeTakeFirst())
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
    await db.deleteFrom('login_failures').where('tenant_slug', '=', slug).where('username', '=', username).execute()
    // a tenant signing in through its identity provider keeps password sign-in for `*` holders only (break-glass)
    if (!user.permissions.includes('*') && !(await passwordLoginAllowed(db, user.tenant_id))) {
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
      await recordAudit(trx, {
        tenantId: actor.tenantId,
        action: 'auth.logout',
        targetType: 'session',
        targetId: actor.tokenId,
      })
    })
  }

  return { login, logout }
}
