import { sql } from 'kysely'
import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { burnPasswordCheck, verifyPassword } from '../../platform/auth/passwords.js'
import { issueAccessToken, revokeAccessToken, revokeUserTokens } from '../../platform/auth/tokens.js'
import { AppError } from '../../platform/http/errors.js'
import { parseShowQuery } from '../../platform/query/parse-query.js'
import { findPresentedUser, userResource, BASIC_USER_FIELDS } from '../users/index.js'
import type { LoginBody } from './auth.schemas.js'

const invalidCredentials = () => new AppError(401, 'invalid_credentials', 'The tenant, username or password is wrong')

export type AuthService = ReturnType<typeof createAuthService>

export function createAuthService({ db, config }: AppDeps) {
  const { loginMaxFailures, loginWindowSeconds, tokenTtlDays } = config.auth

  /** Seconds until a throttled tenant+username may try again; 0 when not throttled. */
  async function throttleSeconds(slug: string, username: string): Promise<number> {
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

  /** Exchanges tenant, username and password for an access token; one message for every failure. */
  async function login(body: LoginBody) {
    const slug = body.tenant.toLowerCase()
    const username = body.username.toLowerCase()
    const wait = await throttleSeconds(slug, username)
    if (wait > 0)
      throw new AppError(429, 'too_many_attempts', 'Too many failed logins; try again later', undefined, {
        'Retry-After': String(wait),
      })

    // the tenant first, so that the user lookup names its tenant (routed to one shard on Citus, docs/citus.md)
    const tenant = await db.selectFrom('tenants').select(['id', 'settings']).where('slug', '=', slug).executeTakeFirst()
    const found =
      tenant &&
      (await db
        .selectFrom('users as u')
        .select([
          'u.id',
          'u.tenant_id',
          'u.password_hash',
          'u.active',
          'u.deleted_at',
          'u.blacked_out_at',
          'u.prevent_logout',
          'u.password_change_required',
        ])
        .where('u.tenant_id', '=', tenant.id)
        .where(sql<boolean>`lower(u.username) = ${username}`)
        .where('u.blacked_out_at', 'is', null)
        .executeTakeFirst())
    const user = found && { ...found, settings: tenant.settings }
    const passwordOk = user
      ? await verifyPassword(user.password_hash, body.password)
      : (await burnPasswordCheck(body.password), false)
    if (!user || !passwordOk || !user.active || user.deleted_at !== null) {
      await db.insertInto('login_failures').values({ tenant_slug: slug, username }).execute()
      throw invalidCredentials()
    }

    return db.transaction().execute(async (trx) => {
      await trx.deleteFrom('login_failures').where('tenant_slug', '=', slug).where('username', '=', username).execute()
      // session replacement: a single-session tenant revokes older tokens, except for protected users
      if (user.settings?.single_session && !user.prevent_logout) await revokeUserTokens(trx, user.tenant_id, user.id)
      const issued = await issueAccessToken(trx, user.tenant_id, user.id, tokenTtlDays, body.device_name)
      const ctx = { db: trx, tenantId: user.tenant_id, baseUrl: config.baseUrl, appUrl: config.appUrl }
      const presented = await findPresentedUser(
        ctx,
        user.id,
        parseShowQuery(userResource, { selects: BASIC_USER_FIELDS.join(',') }, ctx),
      )
      return {
        access_token: issued.token,
        token_type: 'Bearer' as const,
        expires_at: issued.expiresAt,
        password_change_required: user.password_change_required,
        user: presented!,
      }
    })
  }

  /** Revokes the token of the current request. */
  async function logout(actor: Actor): Promise<void> {
    await revokeAccessToken(db, actor.tenantId, actor.tokenId)
  }

  return { login, logout }
}
