import { type RawBuilder, sql } from 'kysely'
import type { QuotaLimits } from '../../config.js'
import type { Db } from '../db/schema.js'
import { AppError } from '../http/errors.js'

/** A quota per tenant (docs/limits.md): what a tenant may keep, not how fast it may ask. */
export type QuotaName = keyof QuotaLimits
export const QUOTA_NAMES: readonly QuotaName[] = ['users', 'automations', 'push_subscriptions', 'file_bytes']

/** The status of a refusal: 413 for stored bytes (the upload is too large for what is left), 403 for the others. */
const REFUSED_WITH: Record<QuotaName, 403 | 413> = {
  users: 403,
  automations: 403,
  push_subscriptions: 403,
  file_bytes: 413,
}

/**
 * What a tenant keeps of each quota, as a scalar subquery pinned to the tenant (routed to its shard on
 * Citus). Stored bytes are a bigint sum (a tenant passes int4 at 2 GiB), read as a number (int8 parser).
 */
const USED: Record<QuotaName, (tenantId: number) => RawBuilder<unknown>> = {
  users: (tenantId) => sql`(select count(*) from users where tenant_id = ${tenantId} and deleted_at is null)`,
  automations: (tenantId) => sql`(select count(*) from automations where tenant_id = ${tenantId})`,
  push_subscriptions: (tenantId) => sql`(select count(*) from push_subscriptions where tenant_id = ${tenantId})`,
  // a file's own bytes and its poster's (posters are stored beside it, up to 5 MiB each)
  file_bytes: (tenantId) =>
    sql`(select coalesce(sum(size + poster_size), 0) from filemanager_files where tenant_id = ${tenantId})`,
}

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
  const row = await db.selectFrom('tenant_limits').select('limits').where('tenant_id', '=', tenantId).executeTakeFirst()
  return { ...defaults, ...readQuotaOverrides(row?.limits) }
}

/** What a tenant keeps now, per quota (one statement). */
export async function quotaUsage(db: Db, tenantId: number): Promise<Record<QuotaName, number>> {
  const columns = QUOTA_NAMES.map((name) => sql`${USED[name](tenantId)}::int8 as ${sql.id(name)}`)
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
  name: QuotaName,
  defaults: QuotaLimits,
  adding: number | (() => Promise<number>) = 1,
): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`quota:${name}:${tenantId}`}, 0))`.execute(trx)
  const added = typeof adding === 'number' ? adding : await adding()
  if (added <= 0) return
  const limit = (await tenantQuotas(trx, tenantId, defaults))[name]
  const { rows } = await sql<{ used: number }>`select ${USED[name](tenantId)}::int8 as used`.execute(trx)
  const used = rows[0]!.used
  if (used + added <= limit) return
  const amount = name === 'file_bytes' ? `${used} of ${limit} bytes used, ${added} more asked` : `${used} of ${limit}`
  throw new AppError(
    REFUSED_WITH[name],
    'quota_exceeded',
    `Your organisation has reached its ${name} quota (${amount}); an operator can raise it`,
    { quota: [name] },
    undefined,
    { quota: name, limit, used },
  )
}
