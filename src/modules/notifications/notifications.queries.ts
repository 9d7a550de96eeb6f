import { type RawBuilder, sql, type SelectQueryBuilder, type UpdateObject } from 'kysely'
import type { Database, Db, NotificationsTable } from '../../platform/db/schema.js'

/** A select over `notifications as n` (the resource alias), possibly filtered. */
export type NotificationQuery = SelectQueryBuilder<Database & { n: NotificationsTable }, 'n', object>

/** The requester's own notifications: every read and write starts here. */
export const selectOwnNotifications = (db: Db, tenantId: number, userId: number) =>
  db.selectFrom('notifications as n').where('n.tenant_id', '=', tenantId).where('n.notifiable_id', '=', userId)

export const countQuery = (query: NotificationQuery) => query.select((eb) => eb.fn.countAll<number>().as('count'))

export async function countNotifications(query: NotificationQuery): Promise<number> {
  const row = await countQuery(query).executeTakeFirstOrThrow()
  return Number(row.count)
}

export async function countUnreadNotifications(db: Db, tenantId: number, userId: number): Promise<number> {
  return (await countUnreadNotificationsOf(db, tenantId, [userId])).get(userId) ?? 0
}

/** Unread counts of several users at once (users without unread records are absent). */
export async function countUnreadNotificationsOf(
  db: Db,
  tenantId: number,
  userIds: number[],
): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('notifications as n')
    .select(['n.notifiable_id', (eb) => eb.fn.countAll<number>().as('unread')])
    .where('n.tenant_id', '=', tenantId)
    .where('n.notifiable_id', 'in', userIds)
    .where('n.read_at', 'is', null)
    .groupBy('n.notifiable_id')
    .execute()
  return new Map(rows.map((row) => [Number(row.notifiable_id), Number(row.unread)]))
}

export interface SeenReadChange {
  /** undefined = leave as is; null = clear (single record only). */
  seenAt?: Date | null
  readAt?: Date | null
}

function changeSet({ seenAt, readAt }: SeenReadChange): UpdateObject<Database, 'notifications'> {
  const set: UpdateObject<Database, 'notifications'> = { updated_at: sql<Date>`now()` }
  if (readAt !== undefined) set.read_at = readAt
  if (seenAt !== undefined) set.seen_at = seenAt
  // read_at alone supplies seen_at, keeping an earlier seen time (contract 40).
  else if (readAt) set.seen_at = sql<Date>`coalesce(seen_at, ${readAt})`
  return set
}

/**
 * Updates the user's UNREAD records that `matching` (a filtered select of `n.id`) returns; the records
 * changed. The subquery carries the same filters as the list, so a filter means the same everywhere.
 * It locks the records in id order: two marks of the same records at once (a user's "mark all read" on
 * two devices, or a retry) otherwise locked them in plan order and deadlocked (40P01, the fleet's
 * mixed load), each waiting a second for the deadlock check while holding its rows.
 */
export async function markUnreadNotifications(
  db: Db,
  tenantId: number,
  userId: number,
  change: SeenReadChange,
  matching: NotificationQuery,
): Promise<{ id: string; notifiable_id: number }[]> {
  return db
    .updateTable('notifications')
    .set(changeSet(change))
    .where('tenant_id', '=', tenantId)
    .where('notifiable_id', '=', userId)
    .where('read_at', 'is', null)
    .where('id', 'in', matching.where('n.read_at', 'is', null).select('n.id').orderBy('n.id').forUpdate('n'))
    .returning(['id', 'notifiable_id'])
    .execute()
}

/** The mark of one own notification (its RETURNING added by the caller). */
const markOwnNotification = (db: Db, tenantId: number, userId: number, id: string, change: SeenReadChange) =>
  db
    .updateTable('notifications')
    .set(changeSet(change))
    .where('tenant_id', '=', tenantId)
    .where('notifiable_id', '=', userId)
    .where('id', '=', id)

/** SQL: the mark of one own notification, returning `id` and `user_id` (a statement `writeWithSyncChanges` takes). */
export const markNotificationSql = (db: Db, tenantId: number, userId: number, id: string, change: SeenReadChange) =>
  sql`${markOwnNotification(db, tenantId, userId, id, change).returning(['id', 'notifiable_id as user_id'])}`

export async function markNotification(
  db: Db,
  tenantId: number,
  userId: number,
  id: string,
  change: SeenReadChange,
): Promise<{ id: string; notifiable_id: number } | undefined> {
  return markOwnNotification(db, tenantId, userId, id, change).returning(['id', 'notifiable_id']).executeTakeFirst()
}

/** Deletes up to `batchSize` notifications of a tenant; the number deleted (0 = done). Run it in a transaction with its access change. */
export async function deleteTenantNotificationsBatch(db: Db, tenantId: number, batchSize: number): Promise<number> {
  const result = await sql`
    delete from notifications where tenant_id = ${tenantId} and id in (
      select id from notifications where tenant_id = ${tenantId} limit ${batchSize}
    )`.execute(db)
  return Number(result.numAffectedRows ?? 0)
}

/** Deletes up to `batchSize` read notifications (all tenants) read before the cut-off; the tenant of each one deleted. */
export async function deleteReadNotificationsBatch(db: Db, readBefore: Date, batchSize: number): Promise<number[]> {
  const { rows } = await sql<{ tenant_id: number }>`
    delete from notifications where (tenant_id, id) in (
      select tenant_id, id from notifications where read_at is not null and read_at < ${readBefore} limit ${batchSize}
    ) returning tenant_id`.execute(db)
  return rows.map((row) => Number(row.tenant_id))
}

export const selectNotificationSettings = (db: Db, tenantId: number) =>
  db.selectFrom('notification_settings as s').where('s.tenant_id', '=', tenantId)

/** SQL: the IDs among `ids` that are no present (non-deleted) user of the tenant. */
const missingUsersSql = (tenantId: number, ids: number[]) => sql<{ id: number }>`
  select wanted.id from unnest(${ids}::bigint[]) as wanted(id)
  where not exists (select 1 from users u where u.tenant_id = ${tenantId} and u.id = wanted.id and u.deleted_at is null)`

/** SQL: the IDs among `ids` that are no department of the tenant. */
const missingDepartmentsSql = (tenantId: number, ids: number[]) => sql<{ id: number }>`
  select wanted.id from unnest(${ids}::bigint[]) as wanted(id)
  where not exists (select 1 from departments d where d.tenant_id = ${tenantId} and d.id = wanted.id)`

async function missingIds(db: Db, missing: RawBuilder<{ id: number }>, ids: number[]): Promise<number[]> {
  if (ids.length === 0) return []
  const { rows } = await sql<{ id: number }>`select m.id from (${missing}) m order by m.id`.execute(db)
  return [...new Set(rows.map((r) => Number(r.id)))]
}

/** The IDs among `ids` that are not present (non-deleted) users / departments of the tenant. */
export const findMissingUserIds = (db: Db, tenantId: number, ids: number[]) =>
  missingIds(db, missingUsersSql(tenantId, ids), ids)
export const findMissingDepartmentIds = (db: Db, tenantId: number, ids: number[]) =>
  missingIds(db, missingDepartmentsSql(tenantId, ids), ids)

/** A send as it is stored: its text, its sender and the recipients it lists. */
export interface GenericNotificationValues {
  title: string
  body: string
  url: string
  userId: number
  userIds: number[]
  departmentIds: number[]
}

/** Stores a send (its listed recipients checked before: `findMissingUserIds`, `findMissingDepartmentIds`). */
export async function insertGenericNotification(db: Db, tenantId: number, values: GenericNotificationValues) {
  const { rows } = await sql<{
    id: number
    title: string
    body: string
    url: string
    user_ids: number[]
    department_ids: number[]
  }>`
    ${genericNotificationInsert(tenantId, values)}
    returning id, title, body, url, user_ids, department_ids`.execute(db)
  return rows[0]
}

/** The insert of a send, only when `onlyIf` holds; `id` reserved beforehand, or the sequence's next. */
export function genericNotificationInsert(
  tenantId: number,
  values: GenericNotificationValues & { id?: number },
  onlyIf?: RawBuilder<boolean>,
) {
  const row = sql`coalesce(${values.id ?? null}::bigint, nextval('global_id_seq')), ${tenantId}::bigint, ${values.title}::text,
    ${values.body}::text, ${values.url}::text, ${values.userId}::bigint, ${values.userIds}::bigint[], ${values.departmentIds}::bigint[]`
  // without a condition a values list: Citus sends it whole to the tenant's worker (an insert … select it
  // evaluates on the coordinator); the condition only rides on the one-statement send of one PostgreSQL
  return sql`insert into generic_notifications (id, tenant_id, title, body, url, user_id, user_ids, department_ids)
    ${onlyIf ? sql`select ${row} where ${onlyIf}` : sql`values (${row})`}`
}

export function findGenericNotification(db: Db, tenantId: number, id: number) {
  return db
    .selectFrom('generic_notifications')
    .select(['id', 'title', 'body', 'url', 'user_ids', 'department_ids'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst()
}

export function selectGenericNotifications(db: Db, tenantId: number, ids: number[]) {
  return db
    .selectFrom('generic_notifications')
    .select(['id', 'title', 'body', 'url', 'user_id', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', ids)
    .execute()
}

/** A stored record's fields a push message is made of. */
export function findNotificationForPush(db: Db, tenantId: number, id: string) {
  return db
    .selectFrom('notifications')
    .select(['id', 'type', 'created_at', 'notifiable_id', 'data'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst()
}

/** Of the user's own records, those among `ids` (all of them without `ids`). */
export async function selectOwnNotificationIds(db: Db, tenantId: number, userId: number, ids: string[] | undefined) {
  const only = ids ? sql`and n.id = any(${ids}::uuid[])` : sql``
  const { rows } = await sql<{ id: string }>`select n.id from notifications n
      where n.tenant_id = ${tenantId} and n.notifiable_type = 'user' and n.notifiable_id = ${userId} ${only}`.execute(
    db,
  )
  return rows.map((row) => row.id)
}

/** The records among `ids` that exist in the tenant. */
export async function selectExistingNotificationIds(db: Db, tenantId: number, ids: string[]) {
  const { rows } = await sql<{ id: string }>`select id from notifications
      where tenant_id = ${tenantId} and id = any(${ids}::uuid[])`.execute(db)
  return new Set(rows.map((row) => row.id))
}
