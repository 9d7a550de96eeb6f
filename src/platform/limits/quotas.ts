import { sql } from 'kysely'
import type { QuotaLimits } from '../../config.js'
import type { Db } from '../db/schema.js'
import { AppError } from '../http/errors.js'

/** A quota per tenant (docs/limits.md): what a tenant may keep, not how fast it may ask. */
export type QuotaName = keyof QuotaLimits
export const QUOTA_NAMES: readonly QuotaName[] = ['users', 'automations', 'push_subscriptions']

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The operator's quota overrides inside `tenant_limits.limits` (`{"quotas":{"users":50000}}`). */
export function readQuotaOverrides(stored: unknown): Partial<QuotaLimits> {
  const quotas = isRecord(stored) ? stored.quotas : undefined
  if (!isRecord(quotas)) return {}
  const overrides: Partial<QuotaLimits> = {}
  for (const name of QUOTA_NAMES) {
    const value = quotas[name]
    if (typeof value === 'number' && Number.isInteger(value) && value >= 0) overrides[name] = value
  }
  return overrides
}

/** The quotas in force for a tenant: the defaults with the operator's overrides. */
export async function tenantQuotas(db: Db, tenantId: number, defaults: QuotaLimits): Promise<QuotaLimits> {
  const row = await db.selectFrom('tenant_limits').select('limits').where('tenant_id', '=', tenantId).executeTakeFirst()
  return { ...defaults, ...readQuotaOverrides(row?.limits) }
}

/** What a tenant keeps now, per quota (one statement). */
export async function quotaUsage(db: Db, tenantId: number): Promise<Record<QuotaName, number>> {
  const { rows } = await sql<Record<QuotaName, number>>`
    select (select count(*) from users where tenant_id = ${tenantId} and deleted_at is null)::int as users,
           (select count(*) from automations where tenant_id = ${tenantId})::int as automations,
           (select count(*) from push_subscriptions where tenant_id = ${tenantId})::int as push_subscriptions`.execute(
    db,
  )
  return rows[0]!
}

const COUNTS: Record<QuotaName, (db: Db, tenantId: number) => Promise<number>> = {
  users: async (db, tenantId) =>
    Number(
      (
        await db
          .selectFrom('users')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('tenant_id', '=', tenantId)
          .where('deleted_at', 'is', null)
          .executeTakeFirstOrThrow()
      ).n,
    ),
  automations: async (db, tenantId) =>
    Number(
      (
        await db
          .selectFrom('automations')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('tenant_id', '=', tenantId)
          .executeTakeFirstOrThrow()
      ).n,
    ),
  push_subscriptions: async (db, tenantId) =>
    Number(
      (
        await db
          .selectFrom('push_subscriptions')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('tenant_id', '=', tenantId)
          .executeTakeFirstOrThrow()
      ).n,
    ),
}

/**
 * Inside the transaction that adds `adding` of a quota's things: serializes the tenant's additions of that
 * quota (a transaction-scoped advisory lock), counts what exists and refuses with 403 `quota_exceeded`
 * naming the quota when the addition would pass it. The caller's transaction rolls back with the error:
 * nothing is half-written.
 */
export async function assertQuota(
  trx: Db,
  tenantId: number,
  name: QuotaName,
  defaults: QuotaLimits,
  adding = 1,
): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`quota:${name}:${tenantId}`}, 0))`.execute(trx)
  const limit = (await tenantQuotas(trx, tenantId, defaults))[name]
  const used = await COUNTS[name](trx, tenantId)
  if (used + adding <= limit) return
  throw new AppError(
    403,
    'quota_exceeded',
    `Your organisation has reached its ${name} quota (${used} of ${limit}); an operator can raise it`,
    { quota: [name] },
    undefined,
    { quota: name, limit, used },
  )
}
