import { hash, randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../db/schema.js'

const RANDOM_PART = /^[A-Za-z0-9_-]{43}$/
const WITH_TENANT = /^wp_([1-9][0-9]{0,15})_([A-Za-z0-9_-]{43})$/

/**
 * `wp_<tenant id>_` + 32 random bytes in base64url; only the SHA-256 of the whole token is stored.
 * The tenant id lets the first lookup be routed to the tenant's shard (docs/citus.md); it is covered
 * by the hash, so altering it makes the token unknown.
 */
export function generateAccessToken(tenantId: number): string {
  return `wp_${tenantId}_${randomBytes(32).toString('base64url')}`
}

/**
 * The tenant a token names: a number, or null for a token of the older format (`wp_` + 43 characters,
 * no tenant), or undefined when the text is no token of ours at all.
 */
export function accessTokenTenant(token: string): number | null | undefined {
  const match = WITH_TENANT.exec(token)
  if (match) return Number(match[1])
  return token.startsWith('wp_') && RANDOM_PART.test(token.slice(3)) ? null : undefined
}

export function hashAccessToken(token: string): Buffer {
  return hash('sha256', token, 'buffer')
}

/**
 * The SHA-256 of a token as base64 text: the actor cache's key (a token itself is never kept), and
 * `Buffer.from(key, 'base64')` is its stored hash. One-shot hashing: a Hash object per request cost
 * four times as much (2.6 µs against 0.6 µs).
 */
export function accessTokenKey(token: string): string {
  return hash('sha256', token, 'base64')
}

export interface IssuedToken {
  token: string
  id: number
  expiresAt: string
}

/** Issues an opaque access token for a user. */
export async function issueAccessToken(
  db: Db,
  tenantId: number,
  userId: number,
  ttlDays: number,
  deviceName?: string | null,
  options: { mfaEnrollmentOnly?: boolean } = {},
): Promise<IssuedToken> {
  const token = generateAccessToken(tenantId)
  const row = await db
    .insertInto('access_tokens')
    .values({
      tenant_id: tenantId,
      user_id: userId,
      token_hash: hashAccessToken(token),
      device_name: deviceName ?? null,
      ...(options.mfaEnrollmentOnly ? { mfa_enrollment_only: true } : {}),
      // clock_timestamp(): a token issued after a logout mark in the same transaction must be newer than it.
      created_at: sql<Date>`clock_timestamp()`,
      expires_at: sql<Date>`now() + make_interval(days => ${ttlDays})`,
    })
    .returning(['id', 'expires_at'])
    .executeTakeFirstOrThrow()
  return { token, id: row.id, expiresAt: row.expires_at }
}

export async function revokeAccessToken(db: Db, tenantId: number, tokenId: number): Promise<void> {
  await db
    .updateTable('access_tokens')
    .set({ revoked_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', tokenId)
    .where('revoked_at', 'is', null)
    .execute()
}

/**
 * The one place sessions end (issue 39): revokes every token of a user, optionally keeping one (the
 * token of the current request). A revoked token stays revoked, so reactivating the user brings
 * none back. Every path that ends a user's sessions calls this: deactivation (`PUT /api/users/{id}`,
 * a passed `leaving_date`, SCIM), deletion, password change and reset, single-session sign-in.
 */
export async function revokeUserTokens(
  db: Db,
  tenantId: number,
  userId: number,
  exceptTokenId?: number,
): Promise<void> {
  let query = db
    .updateTable('access_tokens')
    .set({ revoked_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
  if (exceptTokenId !== undefined) query = query.where('id', '!=', exceptTokenId)
  await query.execute()
}

/**
 * A role (or a user's new role) starts requiring MFA: the tokens of its users who have no TOTP
 * enabled become enrollment-only (they reach only the enrollment routes), as a new password sign-in
 * would give them. Users with TOTP keep their sessions (their password sign-ins passed it).
 */
export async function downgradeToMfaEnrollment(
  db: Db,
  tenantId: number,
  scope: { roleId: number } | { userId: number },
): Promise<void> {
  await db
    .updateTable('access_tokens as t')
    .set({ mfa_enrollment_only: true })
    .where('t.tenant_id', '=', tenantId)
    .where('t.revoked_at', 'is', null)
    .where('t.mfa_enrollment_only', '=', false)
    .where((eb) =>
      'userId' in scope
        ? eb('t.user_id', '=', scope.userId)
        : eb(
            't.user_id',
            'in',
            eb
              .selectFrom('users as u')
              .select('u.id')
              .where('u.tenant_id', '=', tenantId)
              .where('u.role_id', '=', scope.roleId),
          ),
    )
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('user_totp as x')
            .select('x.user_id')
            .where('x.tenant_id', '=', tenantId)
            .whereRef('x.user_id', '=', 't.user_id')
            .where('x.enabled_at', 'is not', null),
        ),
      ),
    )
    .execute()
}
