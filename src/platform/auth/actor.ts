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
}
