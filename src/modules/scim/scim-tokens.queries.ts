import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'

/** The columns of a SCIM token clients see: never its hash. */
const listed = ['id', 'name', 'default_role_id', 'created_by', 'created_at', 'revoked_at'] as const

/** The unrevoked SCIM token with this hash in the tenant, with its default role's permissions (one routed statement). */
export function findScimToken(db: Db, tenantId: number, tokenHash: Buffer) {
  return db
    .selectFrom('scim_tokens as t')
    .leftJoin('roles as r', (join) =>
      join.onRef('r.tenant_id', '=', 't.tenant_id').onRef('r.id', '=', 't.default_role_id'),
    )
    .select(['t.id', 't.tenant_id', 't.default_role_id', 'r.permissions'])
    .where('t.tenant_id', '=', tenantId)
    .where('t.token_hash', '=', tokenHash)
    .where('t.revoked_at', 'is', null)
    .executeTakeFirst()
}

/** The role with this id, or (no id) the tenant's first role named Employee. */
export function findDefaultRole(db: Db, tenantId: number, roleId: number | undefined) {
  let query = db.selectFrom('roles').select(['id', 'active', 'permissions']).where('tenant_id', '=', tenantId)
  query =
    roleId === undefined ? query.where('name', '=', 'Employee').orderBy('id').limit(1) : query.where('id', '=', roleId)
  return query.executeTakeFirst()
}

export interface NewScimToken {
  name: string
  tokenHash: Buffer
  defaultRoleId: number
  createdBy: number | null
}

export function insertScimToken(db: Db, tenantId: number, token: NewScimToken) {
  return db
    .insertInto('scim_tokens')
    .values({
      tenant_id: tenantId,
      name: token.name,
      token_hash: token.tokenHash,
      default_role_id: token.defaultRoleId,
      created_by: token.createdBy,
    })
    .returning(listed)
    .executeTakeFirstOrThrow()
}

export function selectScimTokens(db: Db, tenantId: number) {
  return db.selectFrom('scim_tokens').select(listed).where('tenant_id', '=', tenantId).orderBy('id').execute()
}

/** The token's revocation time, its row locked (a revocation in the same transaction follows). */
export function findScimTokenForUpdate(db: Db, tenantId: number, id: number) {
  return db
    .selectFrom('scim_tokens')
    .select('revoked_at')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst()
}

export async function revokeScimToken(db: Db, tenantId: number, id: number): Promise<void> {
  await db
    .updateTable('scim_tokens')
    .set({ revoked_at: sql<string>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute()
}
