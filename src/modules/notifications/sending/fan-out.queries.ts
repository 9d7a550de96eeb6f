import { type RawBuilder, sql } from 'kysely'
import { insertedRows } from '../../../platform/db/database.js'
import type { Db } from '../../../platform/db/schema.js'
import { syncChangeCtes, writeWithSyncChangesInTransaction } from '../../../platform/sync/change-log.js'
import { NOTIFICATION_ENTITY } from '../notifications.feed.js'
import type { NotificationSpec, RecipientsQuery } from './fan-out.js'

/**
 * SQL: the recipient user ids of `spec` (listed users ∪ department members ∪ the named query; active,
 * non-deleted, non-blacked-out personal accounts). Only the sources a spec names are in the statement,
 * and listed users alone are probed by id: the pool plans a statement once, without its values (generic
 * plans), and for unknown arrays it guessed a department branch of hundreds of members and a join
 * worth hashing every user of the tenant, on each send to one user.
 */
export function recipientsSql(spec: NotificationSpec, custom: RecipientsQuery | undefined): RawBuilder<{ id: number }> {
  const t = spec.tenantId
  const userIds = [...new Set(spec.recipients.userIds ?? [])]
  const departmentIds = [...new Set(spec.recipients.departmentIds ?? [])]
  const exceptUserIds = spec.recipients.exceptUserIds ?? []
  const member =
    departmentIds.length === 0 && !custom
      ? sql`u.id = any(${userIds}::bigint[])`
      : sql`u.id in (${sql.join(
          [
            ...(userIds.length > 0 ? [sql`select unnest(${userIds}::bigint[]) as id`] : []),
            ...(departmentIds.length > 0
              ? [
                  sql`select du.user_id from department_users du where du.tenant_id = ${t} and du.department_id = any(${departmentIds}::bigint[])`,
                ]
              : []),
            ...(custom ? [sql`select q.id from (${custom(t, spec.recipients.query!.targetId)}) q`] : []),
          ],
          sql` union `,
        )})`
  return sql<{ id: number }>`
    select u.id from users u
    where u.tenant_id = ${t} and ${member}${exceptUserIds.length > 0 ? sql` and not (u.id = any(${exceptUserIds}::bigint[]))` : sql``}
      and u.active and u.deleted_at is null and u.blacked_out_at is null and not u.group_account`
}

/**
 * The recipients of `spec`, resolved in ONE statement, ascending. Resolving once keeps a fan-out
 * linear: chunking the resolution itself re-read the members before each chunk (quadratic).
 */
export async function selectRecipientIds(
  db: Db,
  spec: NotificationSpec,
  custom: RecipientsQuery | undefined,
): Promise<number[]> {
  const { rows } = await sql<{ ids: number[] }>`
    select coalesce(array_agg(r.id order by r.id), '{}') as ids from (${recipientsSql(spec, custom)}) r`.execute(db)
  return rows[0].ids.map(Number)
}

/**
 * Inserts one record per recipient of a chunk (idempotent) with their change records for offline clients
 * in the same statement (issue 43): the records created, with their recipient (`user_id`).
 */
export async function insertRecordRows(trx: Db, spec: NotificationSpec, recipients: number[]) {
  const insert = sql`
    insert into notifications (tenant_id, type, notifiable_type, targetable_type, targetable_id, source_key, data, notifiable_id)
    ${insertedRows({
      alias: 'r',
      leading: [
        sql`${spec.tenantId}::bigint`,
        sql`${spec.type}::text`,
        sql`'user'`,
        sql`${spec.targetableType}::text`,
        sql`${spec.targetableId}::bigint`,
        sql`${spec.sourceKey}::text`,
        sql`${JSON.stringify(spec.data)}::jsonb`,
      ],
      columns: [{ name: 'id', type: 'bigint', values: recipients }],
    })}
    on conflict (tenant_id, source_key, notifiable_id) do nothing returning id, notifiable_id as user_id`
  return writeWithSyncChangesInTransaction(trx, spec.tenantId, NOTIFICATION_ENTITY, insert)
}

/** The insert of one record per recipient (idempotent), only when `onlyIf` holds (the one-statement send). */
function recordsInsert(spec: NotificationSpec, recipients: RawBuilder<{ id: number }>, onlyIf?: RawBuilder<boolean>) {
  return sql`insert into notifications (tenant_id, type, notifiable_type, notifiable_id, targetable_type, targetable_id, source_key, data)
    select ${spec.tenantId}, ${spec.type}, 'user', r.id, ${spec.targetableType}, ${spec.targetableId}, ${spec.sourceKey}, ${JSON.stringify(spec.data)}::jsonb
    from (${recipients}) r
    ${onlyIf ? sql`where ${onlyIf}` : sql``}
    on conflict (tenant_id, source_key, notifiable_id) do nothing`
}

/** Select-list items as one list (`select a, b, …`). */
export const selectListItems = (items: RawBuilder<unknown>[]): RawBuilder<unknown> => sql.join(items)

/** Runs select-list items of side effects (NOTIFY, job inserts) in one statement. */
export async function selectSignals(trx: Db, signals: RawBuilder<unknown>): Promise<void> {
  await sql`select ${signals}`.execute(trx)
}

/**
 * The statement parts of a new send's records to listed users only (see `listedRecordsWrite`): whether
 * all `listedCount` listed users are recipients, the records' insert when `onlyIf` holds, and their
 * change records for offline clients (issue 43), the insert being the CTE `records`.
 */
export function listedRecordsSql(spec: NotificationSpec, listedCount: number) {
  const recipients = recipientsSql(spec, undefined)
  return {
    allRecipients: sql<boolean>`(select count(*) from (${recipients}) r) = ${listedCount}`,
    insert: (onlyIf: RawBuilder<boolean>) =>
      sql`${recordsInsert(spec, recipients, onlyIf)} returning id, notifiable_id as user_id`,
    feed: syncChangeCtes(spec.tenantId, NOTIFICATION_ENTITY, 'records'),
  }
}
