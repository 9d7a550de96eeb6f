import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'

/** Serializes sign-in attempts of one tenant+username (a transaction advisory lock, one for the whole fleet). */
export async function lockLoginAttempts(trx: Db, slug: string, username: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`login:${slug}/${username}`}, 0))`.execute(trx)
}

/** Failures in the window, and the seconds until the oldest of them leaves it. */
export function countLoginFailures(db: Db, slug: string, username: string, windowSeconds: number) {
  return db
    .selectFrom('login_failures')
    .select([
      sql<number>`count(*)::int`.as('failures'),
      sql<number>`ceil(extract(epoch from min(attempted_at) + make_interval(secs => ${windowSeconds}) - now()))::int`.as(
        'retry',
      ),
    ])
    .where('tenant_slug', '=', slug)
    .where('username', '=', username)
    .where(sql<boolean>`attempted_at > now() - make_interval(secs => ${windowSeconds})`)
    .executeTakeFirstOrThrow()
}

/** Seconds until the `position`-th newest failure in the window leaves it (the window slides). */
export function findFailureRetry(db: Db, slug: string, username: string, windowSeconds: number, position: number) {
  return db
    .selectFrom('login_failures')
    .select(
      sql<number>`ceil(extract(epoch from attempted_at + make_interval(secs => ${windowSeconds}) - now()))::int`.as(
        'retry',
      ),
    )
    .where('tenant_slug', '=', slug)
    .where('username', '=', username)
    .where(sql<boolean>`attempted_at > now() - make_interval(secs => ${windowSeconds})`)
    .orderBy('attempted_at', 'desc')
    .offset(position - 1)
    .limit(1)
    .executeTakeFirst()
}

export function insertLoginFailure(db: Db, slug: string, username: string) {
  return db.insertInto('login_failures').values({ tenant_slug: slug, username }).execute()
}

export function deleteLoginFailures(db: Db, slug: string, username: string) {
  return db.deleteFrom('login_failures').where('tenant_slug', '=', slug).where('username', '=', username).execute()
}

/** Failures older than a day no longer matter, across tenants: the prune job. */
export function deleteOldLoginFailures(db: Db) {
  return db
    .deleteFrom('login_failures')
    .where(sql<boolean>`attempted_at < now() - interval '1 day'`)
    .execute()
}

/** The account a password sign-in names (username case-insensitive; not blacked out), with its role's rules. */
export function findPasswordUser(db: Db, tenantId: number, username: string) {
  return db
    .selectFrom('users as u')
    .innerJoin('roles as r', (join) => join.onRef('r.id', '=', 'u.role_id').onRef('r.tenant_id', '=', 'u.tenant_id'))
    .select(['u.id', 'u.tenant_id', 'u.password_hash', 'u.active', 'u.deleted_at', 'r.permissions', 'r.requires_mfa'])
    .where('u.tenant_id', '=', tenantId)
    .where(sql<boolean>`lower(u.username) = ${username}`)
    .where('u.blacked_out_at', 'is', null)
    .executeTakeFirst()
}
