import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import type { QuotaCounter } from '../../platform/limits/quotas.js'

export interface StoredAction {
  type: string
  config: Record<string, unknown>
}

export const selectAutomations = (db: Db, tenantId: number) =>
  db.selectFrom('automations as a').where('a.tenant_id', '=', tenantId)

export const selectDeliveries = (db: Db, tenantId: number, automationId: number) =>
  db
    .selectFrom('webhook_deliveries as d')
    .where('d.tenant_id', '=', tenantId)
    .where('d.automation_id', '=', automationId)

export function findAutomation(db: Db, tenantId: number, id: number) {
  return db
    .selectFrom('automations')
    .select(['id', 'name', 'event', 'active', 'actions'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst()
}

/** The stored automation, its row locked: the "before" of an update's audit record. */
export function findAutomationForUpdate(db: Db, tenantId: number, id: number) {
  return db
    .selectFrom('automations')
    .select(['name', 'event', 'active', 'actions'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst()
}

export function insertAutomation(
  db: Db,
  tenantId: number,
  row: { name: string; event: string; active: boolean; actions: StoredAction[]; userId: number },
) {
  return db
    .insertInto('automations')
    .values({
      tenant_id: tenantId,
      name: row.name,
      event: row.event,
      active: row.active,
      actions: JSON.stringify(row.actions),
      user_id: row.userId,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
}

export function updateAutomation(
  db: Db,
  tenantId: number,
  id: number,
  patch: { name?: string; event?: string; active?: boolean; actions?: StoredAction[] },
) {
  const { actions, ...rest } = patch
  return db
    .updateTable('automations')
    .set({ ...rest, ...(actions ? { actions: JSON.stringify(actions) } : {}), updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst()
}

export function deleteAutomation(db: Db, tenantId: number, id: number) {
  return db
    .deleteFrom('automations')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst()
}

/** Active automations of the tenant listening to `eventType` (or to every event), with the tenant's slug. */
export function selectMatchingAutomations(db: Db, tenantId: number, eventType: string) {
  return db
    .selectFrom('automations as a')
    .innerJoin('tenants as t', 't.id', 'a.tenant_id')
    .select(['a.id', 'a.actions', 't.slug'])
    .where('a.tenant_id', '=', tenantId)
    .where('a.active', '=', true)
    .where('a.event', 'in', [eventType, '*'])
    .orderBy('a.id')
    .execute()
}

export interface NewDelivery {
  automationId: number
  actionIndex: number
  url: string
  method: string
}

/** One delivery row per action for an event; an event already recorded for that action is not duplicated. */
export function insertDeliveries(
  db: Db,
  tenantId: number,
  event: { id: string; type: string; data: Record<string, unknown> },
  deliveries: NewDelivery[],
) {
  return db
    .insertInto('webhook_deliveries')
    .values(
      deliveries.map((d) => ({
        tenant_id: tenantId,
        automation_id: d.automationId,
        action_index: d.actionIndex,
        event_id: event.id,
        event_type: event.type,
        event_data: JSON.stringify(event.data),
        event_timestamp: sql<string>`to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
        url: d.url,
        method: d.method,
      })),
    )
    .onConflict((oc) => oc.columns(['tenant_id', 'automation_id', 'event_id', 'action_index']).doNothing())
    .returning(['id', 'series'])
    .execute()
}

export function findDeliveryForAttempt(db: Db, tenantId: number, id: number) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('automations as a', (j) =>
      j.onRef('a.tenant_id', '=', 'd.tenant_id').onRef('a.id', '=', 'd.automation_id'),
    )
    .innerJoin('tenants as t', 't.id', 'd.tenant_id')
    .select([
      'd.id',
      'd.action_index',
      'd.event_id',
      'd.event_type',
      'd.event_timestamp',
      'd.event_data',
      'd.status',
      'd.series',
      'd.attempts',
      'a.actions',
      't.slug as tenant_slug',
    ])
    .where('d.tenant_id', '=', tenantId)
    .where('d.id', '=', id)
    .executeTakeFirst()
}

export interface AttemptRecord {
  status: 'succeeded' | 'retrying' | 'failed'
  error: string | null
  nextAttemptAt: Date | null
  url?: string
  method?: string
  responseStatus?: number | null
  responseTimeMs?: number | null
  responseBody?: string | null
}

/** Records the outcome of attempt `attempt` of series `series`; nothing when a newer series replaced it. */
export function recordAttempt(
  db: Db,
  target: { tenantId: number; deliveryId: number; series: number; attempt: number },
  record: AttemptRecord,
) {
  return db
    .updateTable('webhook_deliveries')
    .set({
      status: record.status,
      attempts: target.attempt,
      error: record.error,
      next_attempt_at: record.nextAttemptAt,
      ...(record.url !== undefined ? { url: record.url, method: record.method } : {}),
      ...(record.responseStatus !== undefined
        ? {
            response_status: record.responseStatus,
            response_time_ms: record.responseTimeMs,
            response_body: record.responseBody,
          }
        : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('tenant_id', '=', target.tenantId)
    .where('id', '=', target.deliveryId)
    .where('series', '=', target.series)
    .where('attempts', '<', target.attempt)
    .returning('id')
    .executeTakeFirst()
}

/** Starts a new attempt series: counters and last response reset, status back to pending. */
export function restartDelivery(db: Db, tenantId: number, automationId: number, id: number) {
  return db
    .updateTable('webhook_deliveries')
    .set({
      series: sql<number>`series + 1`,
      attempts: 0,
      status: 'pending',
      error: null,
      next_attempt_at: null,
      response_status: null,
      response_time_ms: null,
      response_body: null,
      updated_at: sql<Date>`now()`,
    })
    .where('tenant_id', '=', tenantId)
    .where('automation_id', '=', automationId)
    .where('id', '=', id)
    .returning(['id', 'series'])
    .executeTakeFirst()
}

/** In a domain event's insert: whether an active automation of the tenant listens to events of `type`. */
export const activeAutomationListens = (tenantId: number, type: RawBuilder<unknown>, automatable: readonly string[]) =>
  sql<boolean>`(${type} = any(${automatable}::text[]) and exists (select 1 from automations a
    where a.tenant_id = ${tenantId} and a.active and a.event in (${type}, '*')))`

/** Automations' actions in (tenant_id, id) order after `after`, of one tenant when given (the secrets re-seal's pages). */
export const automationActionsAfter = (db: Db, after: [number, number], tenantId: number | undefined, limit: number) =>
  db
    .selectFrom('automations')
    .select(['tenant_id', 'id', 'actions'])
    .where(sql<boolean>`(tenant_id, id) > (${after[0]}, ${after[1]})`)
    .$if(tenantId !== undefined, (q) => q.where('tenant_id', '=', tenantId!))
    .orderBy('tenant_id')
    .orderBy('id')
    .limit(limit)
    .execute()

/** Writes an automation's actions unless they changed since `row` was read; returns the rows written (0 or 1). */
export async function replaceAutomationActions(
  db: Db,
  row: { tenant_id: number; id: number; actions: unknown },
  actions: unknown,
): Promise<number> {
  const updated = await db
    .updateTable('automations')
    .set({ actions: JSON.stringify(actions) })
    .where('tenant_id', '=', row.tenant_id)
    .where('id', '=', row.id)
    .where(sql<boolean>`actions = ${JSON.stringify(row.actions)}::jsonb`)
    .executeTakeFirst()
  return Number(updated.numUpdatedRows)
}

/** The automations quota: the tenant's automations (docs/limits.md). */
export const automationsQuota: QuotaCounter = {
  name: 'automations',
  used: (tenantId) => sql`(select count(*) from automations where tenant_id = ${tenantId})`,
}
