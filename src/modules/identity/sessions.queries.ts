import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'

/** The user's live tokens (not revoked, not expired, not older than the user's logout mark), newest first. */
export function selectLiveSessions(db: Db, tenantId: number, userId: number) {
  return db
    .selectFrom('access_tokens as t')
    .leftJoin('session_activity as s', (join) =>
      join.onRef('s.tenant_id', '=', 't.tenant_id').onRef('s.token_id', '=', 't.id'),
    )
    .innerJoin('users as u', (join) => join.onRef('u.tenant_id', '=', 't.tenant_id').onRef('u.id', '=', 't.user_id'))
    .select(['t.id', 't.created_at', 't.expires_at', 't.device_name', 's.last_used_at', 's.user_agent', 's.ip'])
    .where('t.tenant_id', '=', tenantId)
    .where('t.user_id', '=', userId)
    .where('t.revoked_at', 'is', null)
    .where(sql<boolean>`t.expires_at > now()`)
    .where(sql<boolean>`(u.logout_requested_at is null or t.created_at > u.logout_requested_at)`)
    .orderBy('t.created_at', 'desc')
    .orderBy('t.id', 'desc')
    .execute()
}

export async function userExists(db: Db, tenantId: number, userId: number): Promise<boolean> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .executeTakeFirst()
  return row !== undefined
}

/** A live (unrevoked, unexpired) token of the user. */
export function findLiveToken(db: Db, tenantId: number, userId: number, tokenId: number) {
  return db
    .selectFrom('access_tokens')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('id', '=', tokenId)
    .where('revoked_at', 'is', null)
    .where(sql<boolean>`expires_at > now()`)
    .executeTakeFirst()
}

/** Activity rows of tokens that ended (revoked or expired), across tenants: the prune job. */
export async function deleteEndedSessionActivity(db: Db): Promise<void> {
  await sql`delete from session_activity s where not exists (
            select 1 from access_tokens t where t.tenant_id = s.tenant_id and t.id = s.token_id
              and t.revoked_at is null and t.expires_at > now())`.execute(db)
}
