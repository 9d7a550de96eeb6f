import { sql } from 'kysely'

/** The authenticated principal of a request. */
export interface Actor {
  userId: number
  tenantId: number
  roleId: number
  departmentIds: number[]
  permissions: ReadonlySet<string>
  /** The role holds `*`: bypasses restriction grants everywhere (contract 00 §6). */
  isAdmin: boolean
  langId: string | null
  tokenId: number
  /** The token was issued to a user whose role requires MFA, before they enrolled: it can only enroll. */
  mfaEnrollmentOnly?: boolean
  /**
   * Set when a SCIM client's token made the request (src/modules/scim): no user acts then, `userId`
   * is 0 and changes are audited as `scim:<token id>`.
   */
  scimTokenId?: number
}

/** The user behind a change (a domain event's `actorId`, an audit record's `actor_id`); null for a SCIM client. */
export const actingUserId = (actor: Actor): number | null => (actor.scimTokenId === undefined ? actor.userId : null)

/** The audit label of an actor that is no user (`scim:<token id>`); null for a user. */
export const actorLabel = (actor: Actor): string | null =>
  actor.scimTokenId === undefined ? null : `scim:${actor.scimTokenId}`

/**
 * The columns an actor is made of, read from `users as u` joined with its `roles as r`: the request's
 * token and a shared item's grant token both sign a user in this way.
 */
export const actorColumns = (tenantId: number) =>
  [
    'u.id as user_id',
    'u.tenant_id',
    'u.role_id',
    'u.lang_id',
    'r.permissions',
    // the tenant named in the subquery itself: Citus routes it to one shard only then (docs/citus.md)
    sql<
      number[]
    >`array(select du.department_id from department_users du where du.tenant_id = ${tenantId} and du.user_id = u.id)`.as(
      'department_ids',
    ),
  ] as const

/** The actor of a row read with `actorColumns`, signed in with the token `tokenId` (0: none of its own). */
export function actorOf(
  row: {
    user_id: number
    tenant_id: number
    role_id: number
    lang_id: string | null
    permissions: string[]
    department_ids: number[]
  },
  tokenId: number,
): Actor {
  const permissions = new Set(row.permissions)
  return {
    userId: row.user_id,
    tenantId: row.tenant_id,
    roleId: row.role_id,
    departmentIds: row.department_ids.map(Number),
    permissions,
    isAdmin: permissions.has('*'),
    langId: row.lang_id,
    tokenId,
  }
}
