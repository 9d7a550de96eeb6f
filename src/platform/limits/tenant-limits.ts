import type { BucketLimits, LimitsConfig, QuotaLimits } from '../../config.js'
import { readQuotaOverrides } from './quotas.js'
import type { Db } from '../db/schema.js'
import { BUCKETS } from './rate-limiter.js'

/** The limits in force for one tenant: the defaults (configuration) with the operator's overrides. */
export interface EffectiveLimits {
  token: BucketLimits
  tenant: BucketLimits
  max_in_flight: number
  /**
   * The node's pool connections the tenant's requests hold at once: the operator's, else
   * TENANT_MAX_DB_CONNECTIONS, else `max_in_flight` (no bound of its own: the in-flight bound is it).
   */
  max_db_connections: number
  /** The operator exempted the tenant (e.g. the bench's load): no rate or concurrency limit applies. */
  exempt: boolean
}

/** What an operator may override (every member optional; absent = the default). */
export interface LimitOverrides {
  token?: Partial<BucketLimits>
  tenant?: Partial<BucketLimits>
  max_in_flight?: number
  max_db_connections?: number
  quotas?: Partial<QuotaLimits>
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The overrides stored in `tenant_limits.limits`, read defensively (only known, positive integer members). */
export function readOverrides(stored: unknown): LimitOverrides {
  if (!isRecord(stored)) return {}
  const overrides: LimitOverrides = {}
  for (const scope of ['token', 'tenant'] as const) {
    const given = stored[scope]
    if (!isRecord(given)) continue
    const scoped: Partial<BucketLimits> = {}
    for (const bucket of BUCKETS) {
      const value = given[bucket]
      if (typeof value === 'number' && Number.isInteger(value) && value >= 0) scoped[bucket] = value
    }
    overrides[scope] = scoped
  }
  for (const bound of ['max_in_flight', 'max_db_connections'] as const) {
    const value = stored[bound]
    if (typeof value === 'number' && Number.isInteger(value) && value >= 1) overrides[bound] = value
  }
  const quotas = readQuotaOverrides(stored)
  if (Object.keys(quotas).length > 0) overrides.quotas = quotas
  return overrides
}

export function effectiveLimits(config: LimitsConfig, overrides: LimitOverrides, exempt: boolean): EffectiveLimits {
  const maxInFlight = overrides.max_in_flight ?? config.maxInFlight
  return {
    token: { ...config.token, ...overrides.token },
    tenant: { ...config.tenant, ...overrides.tenant },
    max_in_flight: maxInFlight,
    max_db_connections: overrides.max_db_connections ?? config.maxDbConnections ?? maxInFlight,
    exempt,
  }
}

/** Reads a tenant's overrides (none stored: the defaults). */
export async function loadTenantLimits(db: Db, tenantId: number, config: LimitsConfig): Promise<EffectiveLimits> {
  const row = await db
    .selectFrom('tenant_limits')
    .select(['tenant_limits.limits', 'tenant_limits.exempt'])
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst()
  return effectiveLimits(config, readOverrides(row?.limits), row?.exempt ?? false)
}

/**
 * Replaces a tenant's overrides (the operator's route and `workplace limits set`); `exempt` unchanged
 * when not given.
 */
export async function writeTenantLimits(
  db: Db,
  tenantId: number,
  overrides: LimitOverrides,
  exempt: boolean | undefined,
): Promise<void> {
  const limits = JSON.stringify(readOverrides(overrides))
  await db
    .insertInto('tenant_limits')
    .values({ tenant_id: tenantId, limits, exempt: exempt ?? false })
    .onConflict((oc) =>
      oc.column('tenant_id').doUpdateSet((eb) => ({
        limits,
        exempt: exempt ?? eb.ref('tenant_limits.exempt'),
        updated_at: new Date(),
      })),
    )
    .execute()
}

/** Node-local cache of each tenant's limits: read at most once per `ttlMs`, served stale while re-read. */
export function createTenantLimitsCache(db: Db, config: LimitsConfig, ttlMs: number) {
  const entries = new Map<number, { limits: EffectiveLimits; readAt: number; refreshing: boolean }>()
  const defaults = effectiveLimits(config, {}, false)

  async function refresh(tenantId: number): Promise<EffectiveLimits> {
    const entry = entries.get(tenantId)
    if (entry) entry.refreshing = true
    try {
      const limits = await loadTenantLimits(db, tenantId, config)
      entries.set(tenantId, { limits, readAt: Date.now(), refreshing: false })
      return limits
    } catch {
      // the database is unreachable: the last known limits (or the defaults), asked again next time
      if (entry) entry.refreshing = false
      return entry?.limits ?? defaults
    }
  }

  return {
    /** The tenant's limits: from memory when read within the TTL (a stale entry is re-read in the background). */
    get(tenantId: number): EffectiveLimits | Promise<EffectiveLimits> {
      const entry = entries.get(tenantId)
      if (!entry) return refresh(tenantId)
      if (Date.now() - entry.readAt > ttlMs && !entry.refreshing) void refresh(tenantId)
      return entry.limits
    },
    /** Forgets a tenant's limits (this node changed them). */
    forget(tenantId: number): void {
      entries.delete(tenantId)
    },
  }
}
