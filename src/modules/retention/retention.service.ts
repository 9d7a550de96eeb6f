import type { AppDeps } from '../../platform/app-module.js'
import { actingUserId, type Actor } from '../../platform/auth/actor.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { currentRequestContext } from '../../platform/audit/request-context.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import type { Config } from '../../config.js'
import { createUserServices } from '../users/index.js'
import { selectTenantIds } from '../tenants/index.js'
import type { Db } from '../../platform/db/schema.js'
import { FieldErrorCollector } from '../../platform/http/errors.js'
import { recordSyncWrites } from '../../platform/sync/change-log.js'
import * as queries from './retention.queries.js'

/**
 * One data class of the retention settings: the rows of `table` (key `key`) for which `older(cutOff)`
 * holds are removed by the sweep. `maximum` is the operator's ceiling (environment), when there is one.
 */
interface DataClass {
  description: string
  defaultDays: (config: Config) => number
  maximumDays?: (config: Config) => number | undefined
  /** Each table the class removes from, with its key and the "older than" condition. */
  parts: queries.SweptPart[]
  /** A class whose removal is more than deleting rows: the owning module's own sweep (count only on a dry run). */
  remove?: (deps: AppDeps, tenantId: number, cutOff: Date, dryRun: boolean) => Promise<number>
}

/** Every class a tenant sets a period for, with its documented default (docs/data-protection.md). */
export const DATA_CLASSES = {
  notifications_read: {
    description: 'read notifications, counted from when they were read',
    defaultDays: (config) => Math.min(180, config.notificationRetentionDays ?? 180),
    maximumDays: (config) => config.notificationRetentionDays,
    parts: queries.SWEPT_PARTS.notifications_read,
  },
  notifications_unread: {
    description: 'unread notifications, counted from when they were created',
    defaultDays: () => 365,
    parts: queries.SWEPT_PARTS.notifications_unread,
  },
  audit_log: {
    description: 'audit-log entries',
    defaultDays: (config) => config.auditRetentionDays,
    maximumDays: (config) => config.auditRetentionDays,
    parts: queries.SWEPT_PARTS.audit_log,
  },
  share_access_log: {
    description: 'records of who opened a shared item',
    defaultDays: () => 180,
    parts: queries.SWEPT_PARTS.share_access_log,
  },
  webhook_deliveries: {
    description: 'finished webhook deliveries (succeeded or failed) and their responses',
    defaultDays: () => 30,
    parts: queries.SWEPT_PARTS.webhook_deliveries,
  },
  stored_emails: {
    description: 'e-mails and push messages the platform sent or stored (outbound messages)',
    defaultDays: () => 30,
    parts: queries.SWEPT_PARTS.stored_emails,
  },
  sessions: {
    description: 'ended sessions (expired or revoked tokens) and their device, address and browser',
    defaultDays: () => 90,
    parts: queries.SWEPT_PARTS.sessions,
  },
  data_exports: {
    description:
      'records of data exports whose archive expired or failed (each archive itself is deleted 7 days after it was made)',
    defaultDays: () => 30,
    parts: queries.SWEPT_PARTS.data_exports,
  },
  deactivated_accounts: {
    description:
      'accounts deleted, or inactive past their leaving date, for this long are erased (as POST /api/users/{id}/erasure does)',
    defaultDays: () => 365,
    parts: [],
    remove: (deps, tenantId, cutOff, dryRun) =>
      createUserServices(deps).lifecycle.eraseDeactivatedBefore(tenantId, cutOff, dryRun),
  },
} satisfies Record<string, DataClass>

export type DataClassKey = keyof typeof DATA_CLASSES
/** One value per data class, typed key by key (a class added above fails to compile until added here). */
export const each = <T>(f: (key: DataClassKey) => T): Record<DataClassKey, T> => ({
  notifications_read: f('notifications_read'),
  notifications_unread: f('notifications_unread'),
  audit_log: f('audit_log'),
  share_access_log: f('share_access_log'),
  webhook_deliveries: f('webhook_deliveries'),
  stored_emails: f('stored_emails'),
  sessions: f('sessions'),
  data_exports: f('data_exports'),
  deactivated_accounts: f('deactivated_accounts'),
})
export const DATA_CLASS_KEYS: readonly DataClassKey[] = Object.values(each((k) => k))
const classOf = (key: DataClassKey): DataClass => DATA_CLASSES[key]

export type RetentionPeriods = Record<DataClassKey, number>

export function createRetentionService(deps: AppDeps) {
  const { db, config } = deps
  const defaults = (): RetentionPeriods => each((k) => classOf(k).defaultDays(config))
  const maximums = (): Record<DataClassKey, number | null> => each((k) => classOf(k).maximumDays?.(config) ?? null)

  /** The tenant's periods: its own where set, else the default. */
  async function periods(database: Db, tenantId: number): Promise<RetentionPeriods> {
    const rows = await queries.selectRetentionSettings(database, tenantId)
    const own = new Map(rows.map((r) => [r.data_class, r.days]))
    return each((k) => own.get(k) ?? classOf(k).defaultDays(config))
  }

  async function show(actor: Actor) {
    requirePermission(actor, 'tenant.administrate')
    return { periods: await periods(db, actor.tenantId), defaults: defaults(), maximums: maximums() }
  }

  /** Sets periods (days; null = back to the default); a period beyond the operator's maximum is refused. */
  async function update(actor: Actor, body: Partial<Record<DataClassKey, number | null>>) {
    requirePermission(actor, 'tenant.administrate')
    const problems = new FieldErrorCollector()
    const max = maximums()
    for (const key of DATA_CLASS_KEYS) {
      const days = body[key]
      const ceiling = max[key]
      if (typeof days === 'number' && ceiling !== null && days > ceiling)
        problems.add(key, `must be at most ${ceiling} days (the operator's maximum)`)
    }
    problems.throwIfAny()
    await db.transaction().execute(async (trx) => {
      const before = await periods(trx, actor.tenantId)
      const set = DATA_CLASS_KEYS.filter((k) => typeof body[k] === 'number')
      const reset = DATA_CLASS_KEYS.filter((k) => body[k] === null)
      const now = new Date().toISOString()
      if (set.length > 0)
        await queries.upsertRetentionSettings(
          trx,
          actor.tenantId,
          set,
          set.map((k) => body[k]),
          now,
        )
      if (reset.length > 0) await queries.deleteRetentionSettings(trx, actor.tenantId, reset)
      const after = await periods(trx, actor.tenantId)
      const changes = Object.fromEntries(
        DATA_CLASS_KEYS.filter((k) => before[k] !== after[k]).map((k) => [k, [before[k], after[k]]]),
      )
      if (Object.keys(changes).length > 0)
        await recordDomainEvent(trx, {
          type: 'retention.updated',
          tenantId: actor.tenantId,
          actorId: actingUserId(actor),
          subjectType: 'tenant',
          subjectId: actor.tenantId,
          data: { changes },
          audit: changes,
        })
    })
    return show(actor)
  }

  /**
   * Removes (or, with `dryRun`, counts) what is older than the tenant's periods, in batches of
   * SWEEP_BATCH rows (`for update skip locked`: several workers of a fleet never wait on each other, and
   * a second run finds nothing). The cut-off is fixed once per run, so a dry run and a real run at the
   * same moment agree. A real run that removed something records `retention.sweep` in the audit log.
   */
  async function sweepTenant(
    tenantId: number,
    {
      dryRun = false,
      now = new Date(),
      onBatch,
    }: { dryRun?: boolean; now?: Date; onBatch?: (rows: number, ms: number) => void } = {},
  ) {
    const own = await periods(db, tenantId)
    const removed: Record<DataClassKey, number> = each(() => 0)
    for (const key of DATA_CLASS_KEYS) {
      const cutOffTime = new Date(now.getTime() - own[key] * 86_400_000)
      const cutOff = queries.cutOffTimestamp(cutOffTime)
      const { parts, remove } = classOf(key)
      if (remove) removed[key] += await remove(deps, tenantId, cutOffTime, dryRun)
      for (const part of parts) {
        if (dryRun) {
          removed[key] += await queries.countSweepable(db, tenantId, part, cutOff)
          continue
        }
        for (;;) {
          const started = performance.now()
          const n = part.synced
            ? await db.transaction().execute(async (trx) => {
                const deleted = await queries.deleteSweptBatch(trx, tenantId, part, cutOff)
                if (deleted > 0) await recordSyncWrites(trx, tenantId, { access: [{ scope: 'tenant' }] })
                return deleted
              })
            : await queries.deleteSweptBatch(db, tenantId, part, cutOff)
          // each batch is its own statement and transaction: its time is the longest any row lock is held
          onBatch?.(n, performance.now() - started)
          removed[key] += n
          if (n < queries.SWEEP_BATCH) break
        }
      }
    }
    const total = Object.values(removed).reduce((a, b) => a + b, 0)
    if (!dryRun && total > 0)
      // each batch committed on its own: the record (and its event) once the sweep is complete
      await recordDomainEvent(db, {
        type: 'retention.swept',
        tenantId,
        actorId: currentRequestContext().actorId,
        subjectType: 'tenant',
        subjectId: tenantId,
        data: { removed },
        audit: { removed },
      })
    return { dry_run: dryRun, removed }
  }

  async function sweepNow(actor: Actor, dryRun: boolean) {
    requirePermission(actor, 'tenant.administrate')
    return sweepTenant(actor.tenantId, { dryRun })
  }

  /** The daily job: every tenant, one after the other. */
  async function sweepAll(): Promise<number> {
    const tenants = await selectTenantIds(db)
    let total = 0
    for (const id of tenants) {
      const { removed } = await sweepTenant(Number(id))
      total += Object.values(removed).reduce((a, b) => a + b, 0)
    }
    return total
  }

  return { show, update, sweepNow, sweepTenant, sweepAll }
}

export type RetentionService = ReturnType<typeof createRetentionService>
