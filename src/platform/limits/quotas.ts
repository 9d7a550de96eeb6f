import { type RawBuilder, sql } from 'kysely'
import { QUOTA_NAMES, type QuotaLimits } from '../../config.js'
import { composedTable } from '../composition.js'
import type { Db } from '../db/schema.js'
import { AppError } from '../http/errors.js'

/** A quota per tenant (docs/limits.md): what a tenant may keep, not how fast it may ask. */
export type QuotaName = keyof QuotaLimits
export { QUOTA_NAMES }

/**
 * How a quota counts what a tenant keeps, offered by the module owning the rows (its `AppModule`'s
 * `quotaCounters`, and passed to `assertQuota` by the module adding them).
 */
export interface QuotaCounter {
  name: QuotaName
  /**
   * What the tenant keeps now, as a scalar subquery pinned to the tenant (routed to its shard on
   * Citus). A sum of bytes is a bigint (a tenant passes int4 at 2 GiB), read as a number (int8 parser).
   */
  used: (tenantId: number) => RawBuilder<unknown>
  /** Stored bytes: a refusal is 413 (the upload is too large for what is left) and counts bytes; 403 otherwise. */
  bytes?: boolean
}

declare module '../app-module.js' {
  interface AppModule {
    /** The counters of the quotas of the rows this module owns (docs/limits.md). */
    quotaCounters?: QuotaCounter[]
  }
}

/** The composed modules' counters, one per quota, in the order of `QUOTA_NAMES`. */
const counters = composedTable((modules): QuotaCounter[] => {
  const byName = new Map(modules.flatMap((module) => module.quotaCounters ?? []).map((c) => [c.name, c]))
  return QUOTA_NAMES.map((name) => {
    const counter = byName.get(name)
    if (!counter) throw new Error(`no module counts the ${name} quota (AppModule.quotaCounters)`)
    return counter
  })
})

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The operator's quota overrides inside `tenant_limits.limits` (`{"quotas":{"users":50000}}`). */
export function readQuotaOverrides(stored: unknown): Partial<QuotaLimits> {
  const quotas = isRecord(stored) ? stored.quotas : undefined
  if (!isRecord(quotas)) return {}
  const overrides: Partial<QuotaLimits> = {}
  for (const name of QUOTA_NAMES) {
    const value = quotas[name]
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) overrides[name] = value
  }
  return overrides
}

/** The quotas in force for a tenant: the defaults with the operator's overrides. */
export async function tenantQuotas(db: Db, tenantId: number, defaults: QuotaLimits): Promise<QuotaLimits> {
  const row = await db
    .selectFrom('tenant_limits')
    .select('tenant_limits.limits')
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst()
  return { ...defaults, ...readQuotaOverrides(row?.limits) }
}

/** What a tenant keeps now, per quota (one statement). */
export async function quotaUsage(db: Db, tenantId: number): Promise<Record<QuotaName, number>> {
  const columns = counters().map(({ name, used }) => sql`${used(tenantId)}::int8 as ${sql.id(name)}`)
  const { rows } = await sql<Record<QuotaName, number>>`select ${sql.join(columns)}`.execute(db)
  return rows[0]!
}

/**
 * Inside the transaction that adds `adding` of a quota's things (users, bytes…): serializes the tenant's
 * additions of that quota (a transaction-scoped advisory lock), counts what exists and refuses with
 * `quota_exceeded` naming the quota (403; 413 for stored bytes) when the addition would pass it. The
 * caller's transaction rolls back with the error: nothing is half-written. `adding` may be a function,
 * asked once the lock is held (e.g. 0 for a record that exists already: nothing is counted then).
 */
export async function assertQuota(
  trx: Db,
  tenantId: number,
  counter: QuotaCounter,
  defaults: QuotaLimits,
  adding: number | (() => Promise<number>) = 1,
): Promise<void> {
  const { name } = counter
  await sql`select pg_advisory_xact_lock(hashtextextended(${`quota:${name}:${tenantId}`}, 0))`.execute(trx)
  const added = typeof adding === 'number' ? adding : await adding()
  if (added <= 0) return
  const limit = (await tenantQuotas(trx, tenantId, defaults))[name]
  const { rows } = await sql<{ used: number }>`select ${counter.used(tenantId)}::int8 as used`.execute(trx)
  const used = rows[0]!.used
  if (used + added <= limit) return
  const amount = counter.bytes ? `${used} of ${limit} bytes used, ${added} more asked` : `${used} of ${limit}`
  throw new AppError(
    counter.bytes ? 413 : 403,
    'quota_exceeded',
    `Your organisation has reached its ${name} quota (${amount}); an operator can raise it`,
    { quota: [name] },
    undefined,
    { quota: name, limit, used },
  )
}
