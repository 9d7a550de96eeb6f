import { type RawBuilder, sql } from 'kysely'
import { insertedRows } from '../../platform/db/database.js'
import type { Db } from '../../platform/db/schema.js'

/** One table a data class removes from: its key and the "older than the cut-off" condition. */
export interface SweptPart {
  table: string
  key: string
  older: (cutOff: RawBuilder<unknown>) => RawBuilder<boolean>
  /**
   * The indexed time column the condition bounds: each batch takes the oldest rows in its order, so it
   * reads them from the index instead of scanning the tenant's heap past younger rows on every batch.
   */
  oldestFirst?: string
  /**
   * Rows offline clients hold (issue 43): each batch records an access change for the tenant in its
   * transaction, so the clients' views are recomputed and the rows gone removed.
   */
  synced?: boolean
}

/** The tables each data class removes rows from (a class whose removal is its module's own sweep has none here). */
export const SWEPT_PARTS = {
  notifications_read: [
    {
      table: 'notifications',
      key: 'id',
      older: (c) => sql`read_at is not null and read_at < ${c}`,
      oldestFirst: 'read_at',
      synced: true,
    },
  ],
  notifications_unread: [
    {
      table: 'notifications',
      key: 'id',
      older: (c) => sql`read_at is null and created_at < ${c}`,
      oldestFirst: 'created_at',
      synced: true,
    },
  ],
  audit_log: [{ table: 'audit_log', key: 'id', older: (c) => sql`created_at < ${c}`, oldestFirst: 'created_at' }],
  share_access_log: [
    { table: 'shared_item_accesses', key: 'id', older: (c) => sql`created_at < ${c}`, oldestFirst: 'created_at' },
  ],
  webhook_deliveries: [
    {
      table: 'webhook_deliveries',
      key: 'id',
      older: (c) => sql`status in ('succeeded', 'failed') and created_at < ${c}`,
      oldestFirst: 'created_at',
    },
  ],
  stored_emails: [
    { table: 'outbound_messages', key: 'id', older: (c) => sql`created_at < ${c}`, oldestFirst: 'created_at' },
  ],
  sessions: [
    {
      table: 'session_activity',
      key: 'token_id',
      older: (c) => sql`coalesce(last_used_at, created_at) < ${c} and not exists (
          select 1 from access_tokens t where t.tenant_id = session_activity.tenant_id and t.id = session_activity.token_id
            and t.revoked_at is null and t.expires_at > now())`,
    },
    {
      table: 'access_tokens',
      key: 'id',
      older: (c) => sql`coalesce(revoked_at, expires_at) < ${c}`,
    },
  ],
  data_exports: [
    { table: 'data_exports', key: 'id', older: (c) => sql`status in ('expired', 'failed') and created_at < ${c}` },
  ],
} satisfies Record<string, SweptPart[]>

/** Rows per delete statement: each holds its row locks briefly. */
export const SWEEP_BATCH = 5000

/** A sweep's cut-off time as a timestamptz parameter. */
export const cutOffTimestamp = (time: Date) => sql`${time.toISOString()}::timestamptz`

/** One batch of a part's sweep: the oldest SWEEP_BATCH rows past the cut-off (rows another sweep holds are skipped). */
export function batchDeleteSql(part: SweptPart, tenantId: number, cutOff: RawBuilder<unknown>) {
  const table = sql.table(part.table)
  const key = sql.ref(part.key)
  const order = part.oldestFirst ? sql`order by ${sql.ref(part.oldestFirst)}` : sql``
  // = any(array(…)): the batch's keys are taken first, then deleted through the primary key; as `in (…)`
  // the planner may hash-join them against a scan of the whole tenant, once per batch
  return sql`delete from ${table} where tenant_id = ${tenantId} and ${key} = any(array(
    select ${key} from ${table} where tenant_id = ${tenantId} and ${part.older(cutOff)}
    ${order} limit ${SWEEP_BATCH} for update skip locked))`
}

/** Deletes one batch of a part's sweep; the number of rows deleted. */
export async function deleteSweptBatch(db: Db, tenantId: number, part: SweptPart, cutOff: RawBuilder<unknown>) {
  const result = await batchDeleteSql(part, tenantId, cutOff).execute(db)
  return Number(result.numAffectedRows ?? 0)
}

/** How many rows of a part a sweep would remove (a dry run). */
export async function countSweepable(db: Db, tenantId: number, part: SweptPart, cutOff: RawBuilder<unknown>) {
  const table = sql.table(part.table)
  const { rows } = await sql<{ n: string }>`
            select count(*) as n from ${table} where tenant_id = ${tenantId} and ${part.older(cutOff)}`.execute(db)
  return Number(rows[0]!.n)
}

/** The tenant's own periods, by data class. */
export function selectRetentionSettings(db: Db, tenantId: number) {
  return db.selectFrom('retention_settings').select(['data_class', 'days']).where('tenant_id', '=', tenantId).execute()
}

/** Sets the tenant's period of each of `dataClasses` to the same-index entry of `days` (one statement). */
export async function upsertRetentionSettings(
  db: Db,
  tenantId: number,
  dataClasses: readonly string[],
  days: readonly (number | null | undefined)[],
  updatedAt: string,
): Promise<void> {
  await sql`insert into retention_settings (tenant_id, data_class, days, updated_at)
          ${insertedRows({
            alias: 's',
            leading: [sql`${tenantId}::bigint`],
            columns: [
              { name: 'data_class', type: 'text', values: dataClasses },
              { name: 'days', type: 'int', values: days },
              { name: 'updated_at', type: 'timestamptz', values: dataClasses.map(() => updatedAt) },
            ],
          })}
          on conflict (tenant_id, data_class) do update set days = excluded.days, updated_at = excluded.updated_at`.execute(
    db,
  )
}

/** Drops the tenant's own periods of these data classes (back to the defaults). */
export async function deleteRetentionSettings(db: Db, tenantId: number, dataClasses: readonly string[]): Promise<void> {
  await db
    .deleteFrom('retention_settings')
    .where('tenant_id', '=', tenantId)
    .where('data_class', 'in', dataClasses)
    .execute()
}
