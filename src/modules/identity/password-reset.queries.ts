import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'

/** Serializes reset requests of one tenant and address (a transaction advisory lock, one for the whole fleet). */
export async function lockResetRequests(trx: Db, tenantId: number, ip: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`reset:${tenantId}/${ip}`}, 0))`.execute(trx)
}

/** Requests of the address in the window, and the seconds until the oldest of them leaves it. */
export function countRecentResetRequests(db: Db, tenantId: number, ip: string, windowSeconds: number) {
  return db
    .selectFrom('password_reset_requests')
    .select([
      sql<number>`count(*)::int`.as('requests'),
      sql<number>`ceil(extract(epoch from min(created_at) + make_interval(secs => ${windowSeconds}) - now()))::int`.as(
        'retry',
      ),
    ])
    .where('tenant_id', '=', tenantId)
    .where('ip', '=', ip)
    .where(sql<boolean>`created_at > now() - make_interval(secs => ${windowSeconds})`)
    .executeTakeFirstOrThrow()
}

export function insertResetRequest(db: Db, tenantId: number, ip: string) {
  return db.insertInto('password_reset_requests').values({ tenant_id: tenantId, ip }).execute()
}

/** The account a reset names (username or email, lower-case): active, not deleted or blacked out, with an email. */
export function findResettableUser(db: Db, tenantId: number, login: string) {
  return db
    .selectFrom('users')
    .select(['id', 'email', 'first_name', 'username'])
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.or([eb(sql<string>`lower(username)`, '=', login), eb(sql<string>`lower(email)`, '=', login)]))
    .where('active', '=', true)
    .where('deleted_at', 'is', null)
    .where('blacked_out_at', 'is', null)
    .where('email', 'is not', null)
    .orderBy('id')
    .limit(1)
    .executeTakeFirst()
}

export function updatePassword(db: Db, tenantId: number, userId: number, passwordHash: string) {
  return db
    .updateTable('users')
    .set({ password_hash: passwordHash, password_change_required: false, updated_at: sql<string>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .execute()
}

/** Reset requests older than a day, across tenants: the prune job. */
export function deleteOldResetRequests(db: Db) {
  return db
    .deleteFrom('password_reset_requests')
    .where(sql<boolean>`created_at < now() - interval '1 day'`)
    .execute()
}
