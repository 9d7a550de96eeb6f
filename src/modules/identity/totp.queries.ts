import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'

export interface TotpRow {
  secret: string
  enabled_at: string | null
  last_step: number
  locked_until_seconds: number | null
  recovery_codes: string[]
}

export function findTotp(db: Db, tenantId: number, userId: number): Promise<TotpRow | undefined> {
  return db
    .selectFrom('user_totp')
    .select([
      'secret',
      'enabled_at',
      'last_step',
      'recovery_codes',
      sql<
        number | null
      >`case when locked_until > now() then ceil(extract(epoch from locked_until - now()))::int end`.as(
        'locked_until_seconds',
      ),
    ])
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .executeTakeFirst()
}

export async function hasEnabledTotp(db: Db, tenantId: number, userId: number): Promise<boolean> {
  const row = await db
    .selectFrom('user_totp')
    .select('enabled_at')
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('enabled_at', 'is not', null)
    .executeTakeFirst()
  return row !== undefined
}

/**
 * Counts an attempt unless the factor is locked, in one statement (the row lock serializes
 * concurrent attempts): the attempt reaching `maxFailed` locks until `lockEnd`; a lapsed lock starts
 * a new count. Undefined when locked (or no factor). The times are values, not now() of the
 * statement: Citus refuses a non-immutable function inside the CASE of an UPDATE (docs/citus.md).
 */
export function reserveTotpAttempt(
  db: Db,
  tenantId: number,
  userId: number,
  { at, lockEnd, maxFailed }: { at: string; lockEnd: string; maxFailed: number },
) {
  const lapsed = sql<boolean>`(locked_until is not null and locked_until <= ${at}::timestamptz)`
  const next = sql<number>`(case when ${lapsed} then 1 else failed_attempts + 1 end)`
  return db
    .updateTable('user_totp')
    .set({
      failed_attempts: next,
      locked_until: sql<string>`case when ${next} >= ${maxFailed}
        then ${lockEnd}::timestamptz when ${lapsed} then null else locked_until end`,
      updated_at: sql<string>`now()`,
    })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where(sql<boolean>`(locked_until is null or locked_until <= ${at}::timestamptz)`)
    .returning('failed_attempts')
    .executeTakeFirst()
}

export function releaseTotpAttempts(db: Db, tenantId: number, userId: number) {
  return db
    .updateTable('user_totp')
    .set({ failed_attempts: 0, locked_until: null, updated_at: sql<string>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .execute()
}

/** Accepts a code's time step once: whether it was newer than the last accepted one. */
export async function advanceTotpStep(db: Db, tenantId: number, userId: number, step: number): Promise<boolean> {
  const updated = await db
    .updateTable('user_totp')
    .set({ last_step: step, updated_at: sql<string>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('last_step', '<', step)
    .executeTakeFirst()
  return updated.numUpdatedRows > 0n
}

/** Removes a used recovery code (by its hash): whether it was still there. */
export async function removeRecoveryCode(db: Db, tenantId: number, userId: number, hashed: string): Promise<boolean> {
  const updated = await db
    .updateTable('user_totp')
    .set({ recovery_codes: sql<string[]>`array_remove(recovery_codes, ${hashed})`, updated_at: sql<string>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where(sql<boolean>`${hashed} = any(recovery_codes)`)
    .executeTakeFirst()
  return updated.numUpdatedRows > 0n
}

/** The account name and tenant name shown in an authenticator app. */
export function findTotpLabel(db: Db, tenantId: number, userId: number) {
  return db
    .selectFrom('users as u')
    .innerJoin('tenants as t', 't.id', 'u.tenant_id')
    .select(['u.username', 't.name'])
    .where('u.tenant_id', '=', tenantId)
    .where('t.id', '=', tenantId)
    .where('u.id', '=', userId)
    .executeTakeFirstOrThrow()
}

/** What proves an enrollment: the password hash, and whether the token was issued in the last `recentSeconds`. */
export function findEnrollmentProof(db: Db, tenantId: number, userId: number, tokenId: number, recentSeconds: number) {
  return db
    .selectFrom('users as u')
    .innerJoin('access_tokens as t', (join) =>
      join.onRef('t.user_id', '=', 'u.id').onRef('t.tenant_id', '=', 'u.tenant_id'),
    )
    .select([
      'u.password_hash',
      sql<boolean>`t.created_at > now() - make_interval(secs => ${recentSeconds})`.as('recent'),
    ])
    .where('u.tenant_id', '=', tenantId)
    .where('u.id', '=', userId)
    .where('t.id', '=', tokenId)
    .executeTakeFirstOrThrow()
}

/** A new pending secret, replacing any earlier enrollment. */
export function upsertPendingTotp(db: Db, tenantId: number, userId: number, sealedSecret: string) {
  return db
    .insertInto('user_totp')
    .values({ tenant_id: tenantId, user_id: userId, secret: sealedSecret })
    .onConflict((oc) =>
      oc.columns(['tenant_id', 'user_id']).doUpdateSet({
        secret: sealedSecret,
        enabled_at: null,
        last_step: 0,
        failed_attempts: 0,
        locked_until: null,
        recovery_codes: [],
        updated_at: new Date().toISOString(),
      }),
    )
    .execute()
}

/** Turns a pending factor on: whether it was still pending. */
export async function enableTotp(
  db: Db,
  tenantId: number,
  userId: number,
  { step, recoveryCodes }: { step: number; recoveryCodes: string[] },
): Promise<boolean> {
  const updated = await db
    .updateTable('user_totp')
    .set({
      enabled_at: sql<string>`now()`,
      last_step: step,
      failed_attempts: 0,
      locked_until: null,
      recovery_codes: recoveryCodes,
      updated_at: sql<string>`now()`,
    })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('enabled_at', 'is', null)
    .executeTakeFirst()
  return updated.numUpdatedRows > 0n
}

/** Makes an enrollment-only token a full one. */
export function clearEnrollmentOnly(db: Db, tenantId: number, tokenId: number) {
  return db
    .updateTable('access_tokens')
    .set({ mfa_enrollment_only: false })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', tokenId)
    .execute()
}

export async function deleteTotp(db: Db, tenantId: number, userId: number): Promise<boolean> {
  const deleted = await db
    .deleteFrom('user_totp')
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .executeTakeFirst()
  return deleted.numDeletedRows > 0n
}

/** Every stored secret (of one tenant), for re-sealing under the current key. */
export function selectTotpSecrets(db: Db, tenantId: number | undefined) {
  return db
    .selectFrom('user_totp')
    .select(['tenant_id', 'user_id', 'secret'])
    .$if(tenantId !== undefined, (q) => q.where('tenant_id', '=', tenantId!))
    .execute()
}

export function updateTotpSecret(db: Db, tenantId: number, userId: number, sealedSecret: string) {
  return db
    .updateTable('user_totp')
    .set({ secret: sealedSecret })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .execute()
}
