import type { ColumnType, Generated } from 'kysely'
import type { Id, NullableTimestamp, Timestamp } from './schema.js'

/** Row types of the sign-in tables (migration 0120): sessions, tickets, TOTP, OIDC. */
export interface SessionActivityTable {
  tenant_id: number
  token_id: number
  user_id: number
  created_at: Timestamp
  last_used_at: NullableTimestamp
  user_agent: string | null
  ip: string | null
}

export type AuthTicketKind = 'password_reset' | 'mfa' | 'login_code' | 'oidc_state'

export interface AuthTicketsTable {
  id: Id
  tenant_id: number
  kind: AuthTicketKind
  user_id: number | null
  token_hash: Buffer
  data: ColumnType<Record<string, unknown>, string | undefined, string>
  created_at: Timestamp
  expires_at: Timestamp
  used_at: NullableTimestamp
}

export interface PasswordResetRequestsTable {
  id: Id
  tenant_id: number
  ip: string
  created_at: Timestamp
}

export interface UserTotpTable {
  tenant_id: number
  user_id: number
  /** Sealed (secrets/secret-box.ts). */
  secret: string
  enabled_at: NullableTimestamp
  /** The RFC 6238 time step of the last accepted code (a code is accepted once). */
  last_step: ColumnType<number, number | undefined, number>
  failed_attempts: Generated<number>
  locked_until: NullableTimestamp
  /** SHA-256 hex of each unused recovery code. */
  recovery_codes: ColumnType<string[], string[] | undefined, string[]>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface OidcProvidersTable {
  tenant_id: number
  issuer: string
  client_id: string
  /** Sealed (secrets/secret-box.ts). */
  client_secret: string
  scopes: string
  username_claim: string
  email_claim: string | null
  provisioning: 'off' | 'create'
  default_role_id: number | null
  allowed_email_domains: ColumnType<string[], string[] | undefined, string[]>
  password_login: boolean
  /** A first sign-in may link the local account with the same email when the ID token says `email_verified`. */
  link_by_verified_email: ColumnType<boolean, boolean | undefined, boolean>
  /** `amr` values of an ID token that show the provider did multi-factor authentication. */
  mfa_amr_values: ColumnType<string[], string[] | undefined, string[]>
  /** `acr` values that show it. */
  mfa_acr_values: ColumnType<string[], string[] | undefined, string[]>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface OidcIdentitiesTable {
  id: Id
  tenant_id: number
  user_id: number
  issuer: string
  subject: string
  created_at: Timestamp
}
