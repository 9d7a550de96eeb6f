import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'

export function findProvider(db: Db, tenantId: number) {
  return db.selectFrom('oidc_providers').selectAll().where('tenant_id', '=', tenantId).executeTakeFirst()
}
export type ProviderRow = NonNullable<Awaited<ReturnType<typeof findProvider>>>

/** The provider's `password_login`; undefined without a provider. */
export async function findPasswordLogin(db: Db, tenantId: number): Promise<boolean | undefined> {
  const row = await db
    .selectFrom('oidc_providers')
    .select('password_login')
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst()
  return row?.password_login
}

export function findRolePermissions(db: Db, tenantId: number, roleId: number) {
  return db
    .selectFrom('roles')
    .select('permissions')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', roleId)
    .executeTakeFirst()
}

/** What the settings route stores (the client secret sealed). */
export interface ProviderValues {
  issuer: string
  client_id: string
  client_secret: string
  scopes: string
  username_claim: string
  email_claim: string | null
  provisioning: 'off' | 'create'
  default_role_id: number | null
  allowed_email_domains: string[]
  password_login: boolean
  link_by_verified_email: boolean
  mfa_amr_values: string[]
  mfa_acr_values: string[]
}

export function upsertProvider(db: Db, tenantId: number, values: ProviderValues) {
  return db
    .insertInto('oidc_providers')
    .values({ tenant_id: tenantId, ...values })
    .onConflict((oc) => oc.column('tenant_id').doUpdateSet({ ...values, updated_at: new Date().toISOString() }))
    .execute()
}

/** Whether there was a provider to delete. */
export async function deleteProvider(db: Db, tenantId: number): Promise<boolean> {
  const deleted = await db.deleteFrom('oidc_providers').where('tenant_id', '=', tenantId).executeTakeFirst()
  return deleted.numDeletedRows > 0n
}

/** Serializes authorization requests of one tenant and address (a transaction advisory lock, one for the whole fleet). */
export async function lockStarts(trx: Db, tenantId: number, ip: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`oidc-start:${tenantId}/${ip}`}, 0))`.execute(trx)
}

/** Authorization requests (states) the address started in the last minute. */
export async function countRecentStarts(db: Db, tenantId: number, ip: string): Promise<number> {
  const row = await db
    .selectFrom('auth_tickets')
    .select(sql<number>`count(*)::int`.as('starts'))
    .where('tenant_id', '=', tenantId)
    .where('kind', '=', 'oidc_state')
    .where(sql<boolean>`data->>'ip' = ${ip}`)
    .where(sql<boolean>`created_at > now() - interval '1 minute'`)
    .executeTakeFirstOrThrow()
  return row.starts
}

export interface IdentityKey {
  issuer: string
  subject: string
}

/** The user an identity (issuer, sub) is linked to. */
export function findLinkedUser(db: Db, tenantId: number, identity: IdentityKey) {
  return db
    .selectFrom('oidc_identities')
    .select('user_id')
    .where('tenant_id', '=', tenantId)
    .where('issuer', '=', identity.issuer)
    .where('subject', '=', identity.subject)
    .executeTakeFirst()
}

/** Links an identity unless it is linked already: undefined then. */
export function insertIdentityIfNew(db: Db, tenantId: number, userId: number, identity: IdentityKey) {
  return db
    .insertInto('oidc_identities')
    .values({ tenant_id: tenantId, user_id: userId, issuer: identity.issuer, subject: identity.subject })
    .onConflict((oc) => oc.columns(['tenant_id', 'issuer', 'subject']).doNothing())
    .returning('user_id')
    .executeTakeFirst()
}

export function insertIdentity(db: Db, tenantId: number, userId: number, identity: IdentityKey) {
  return db
    .insertInto('oidc_identities')
    .values({ tenant_id: tenantId, user_id: userId, issuer: identity.issuer, subject: identity.subject })
    .execute()
}

/** Up to two live users with this email (lower-case): one is a match, two are none. */
export function selectUsersByEmail(db: Db, tenantId: number, email: string) {
  return db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`lower(email) = ${email}`)
    .where('deleted_at', 'is', null)
    .limit(2)
    .execute()
}

/** A user (also deleted) whose username is one of `names` or whose email is `email` (all lower-case). */
export function findUserNamed(db: Db, tenantId: number, names: string[], email: string | undefined) {
  return db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where((eb) =>
      eb.or([
        eb(sql<string>`lower(username)`, 'in', names),
        ...(email ? [eb(sql<string>`lower(email)`, '=', email)] : []),
      ]),
    )
    .executeTakeFirst()
}

/** Every stored client secret (of one tenant), for re-sealing under the current key. */
export function selectProviderSecrets(db: Db, tenantId: number | undefined) {
  return db
    .selectFrom('oidc_providers')
    .select(['tenant_id', 'client_secret'])
    .$if(tenantId !== undefined, (q) => q.where('tenant_id', '=', tenantId!))
    .execute()
}

export function updateProviderSecret(db: Db, tenantId: number, sealedSecret: string) {
  return db
    .updateTable('oidc_providers')
    .set({ client_secret: sealedSecret })
    .where('tenant_id', '=', tenantId)
    .execute()
}
