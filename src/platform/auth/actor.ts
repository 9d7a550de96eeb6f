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
