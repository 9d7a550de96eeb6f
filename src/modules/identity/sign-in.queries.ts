import type { Db } from '../../platform/db/schema.js'

export function findTenantBySlug(db: Db, slug: string) {
  return db.selectFrom('tenants').select('id').where('slug', '=', slug).executeTakeFirst()
}

export function findTenantSettings(db: Db, tenantId: number) {
  return db.selectFrom('tenants').select('settings').where('id', '=', tenantId).executeTakeFirstOrThrow()
}

/** A user who may sign in: exists in the tenant, active, neither deleted nor blacked out; with their role's rules. */
export function findSignInEligibleUser(db: Db, tenantId: number, userId: number) {
  return db
    .selectFrom('users as u')
    .innerJoin('roles as r', (join) => join.onRef('r.id', '=', 'u.role_id').onRef('r.tenant_id', '=', 'u.tenant_id'))
    .select(['u.id', 'u.role_id', 'r.permissions', 'r.requires_mfa'])
    .where('u.tenant_id', '=', tenantId)
    .where('u.id', '=', userId)
    .where('u.active', '=', true)
    .where('u.deleted_at', 'is', null)
    .where('u.blacked_out_at', 'is', null)
    .executeTakeFirst()
}

/** The user's permissions (their role's), also of a deleted user unless `liveOnly`. */
export function findUserPermissions(db: Db, tenantId: number, userId: number, { liveOnly }: { liveOnly: boolean }) {
  return db
    .selectFrom('users as u')
    .innerJoin('roles as r', (join) => join.onRef('r.id', '=', 'u.role_id').onRef('r.tenant_id', '=', 'u.tenant_id'))
    .select(['u.id', 'r.permissions'])
    .where('u.tenant_id', '=', tenantId)
    .where('u.id', '=', userId)
    .$if(liveOnly, (q) => q.where('u.deleted_at', 'is', null))
    .executeTakeFirst()
}

export function findUserPasswordHash(db: Db, tenantId: number, userId: number) {
  return db
    .selectFrom('users')
    .select('password_hash')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .executeTakeFirstOrThrow()
}

export function findSessionFlags(db: Db, tenantId: number, userId: number) {
  return db
    .selectFrom('users')
    .select(['prevent_logout', 'password_change_required'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .executeTakeFirstOrThrow()
}

export function insertSessionActivity(
  db: Db,
  tenantId: number,
  row: { tokenId: number; userId: number; userAgent: string | null; ip: string | null },
) {
  return db
    .insertInto('session_activity')
    .values({ tenant_id: tenantId, token_id: row.tokenId, user_id: row.userId, user_agent: row.userAgent, ip: row.ip })
    .execute()
}
