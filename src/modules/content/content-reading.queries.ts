import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import { type ContentRow, contentRow, type Principal } from './content-declaration.js'
import type { ReachDetail } from './content-reach.resource.js'
import type { RecordCondition } from './content-resource.queries.js'

// The statements of content reading (docs/content-reading.md): first the shared ones, then a reading's own.

/** The recipients query of reminders: the users recorded for a reminder (registered by each reading module under this name). */
export const CONTENT_REMINDER_RECIPIENTS = 'contentReminder:recipients'
export const reminderRecipientsSql = (tenantId: number, reminderId: number) =>
  sql<{ id: number }>`select rr.user_id as id from content_reminder_recipients rr
    where rr.tenant_id = ${tenantId} and rr.reminder_id = ${reminderId}`

/** The tenant's `reach_detail` (no row: `named`). */
export async function readReachDetail(db: Db, tenantId: number): Promise<ReachDetail> {
  const row = await db
    .selectFrom('reading_settings')
    .select('reach_detail')
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst()
  return row?.reach_detail ?? 'named'
}

/** Sets the tenant's `reach_detail` (one upsert, routed to the tenant's shard on Citus). */
export async function writeReachDetail(db: Db, tenantId: number, detail: ReachDetail): Promise<void> {
  await db
    .insertInto('reading_settings')
    .values({ tenant_id: tenantId, reach_detail: detail })
    .onConflict((oc) =>
      oc.column('tenant_id').doUpdateSet((eb) => ({
        reach_detail: eb.ref('excluded.reach_detail'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute()
}

// A reading's own statements (content-reading.ts), on the content table and `alias` of its declaration.

/** SQL: drafts (no `published_at`) and scheduled records are visible only to editors (`<module>.manage`). */
export const publishedOrEditorSql = (p: Principal, alias: string, module: string) =>
  sql<boolean>`(${sql.ref(`${alias}.published_at`)} <= now() or ${p.can(`${module}.manage`)})`

/**
 * SQL: the listed record `c` asks for a confirmation, is published, and the reader `userId` has
 * confirmed it (`word` `confirmed`) or not yet (`pending`).
 */
export function confirmationFilterSql(tenantId: number, alias: string, userId: number, word: string) {
  const confirmed = sql<boolean>`exists (select 1 from content_reads cr where cr.tenant_id = ${tenantId}
        and cr.target_type = ${alias} and cr.target_id = c.id and cr.user_id = ${userId}
        and cr.confirmed_at is not null)`
  return sql<boolean>`(c.requires_reading_confirmation and c.published_at <= now()
        and ${word === 'pending' ? sql`not ${confirmed}` : confirmed})`
}

/**
 * Claims the publication of record `id` if it is due and was never published: ONE conditional update
 * (`published_notified_at` from null), so however many workers or requests race, exactly one gets the row.
 */
export async function claimPublication(
  trx: Db,
  table: string,
  tenantId: number,
  id: number,
): Promise<ContentRow | undefined> {
  const { rows } = await sql<Record<string, unknown>>`update ${sql.table(table)} set published_notified_at = now()
      where tenant_id = ${tenantId} and id = ${id} and published_notified_at is null and published_at <= now()
      returning *`.execute(trx)
  return rows.length === 0 ? undefined : contentRow(rows[0])
}

/** Deletes what was read and reminded of record `id` (its reminder recipients cascade). */
export async function deleteReadsAndReminders(trx: Db, tenantId: number, alias: string, id: number): Promise<void> {
  await sql`delete from content_reads where tenant_id = ${tenantId} and target_type = ${alias}
        and target_id = ${id}`.execute(trx)
  await sql`delete from content_reminders where tenant_id = ${tenantId} and target_type = ${alias}
        and target_id = ${id}`.execute(trx)
}

/** Removes the pending job of `key`, if any (graphile-worker's own function). */
export async function removeJob(trx: Db, key: string): Promise<void> {
  await sql`select graphile_worker.remove_job(${key})`.execute(trx)
}

/** A reader's own state of a record. */
export interface ReadState {
  seen_at: string | null
  confirmed_at: string | null
}

/** Record `id` if `visible` holds for it, with the reading state of `userId`, in one statement. */
export async function findVisibleWithState(
  db: Db,
  table: string,
  alias: string,
  tenantId: number,
  userId: number,
  id: number,
  visible: RecordCondition,
): Promise<{ row: ContentRow; state: ReadState } | undefined> {
  const { rows } = await sql<Record<string, unknown> & { my_seen_at: string | null; my_confirmed_at: string | null }>`
      select c.*, r.seen_at as my_seen_at, r.confirmed_at as my_confirmed_at from ${sql.table(table)} c
        left join content_reads r on r.tenant_id = c.tenant_id and r.target_type = ${alias}
          and r.target_id = c.id and r.user_id = ${userId}
      where c.tenant_id = ${tenantId} and c.id = ${id} and ${visible('c')}`.execute(db)
  if (!rows[0]) return undefined
  const { my_seen_at, my_confirmed_at, ...row } = rows[0]
  return { row: contentRow(row), state: { seen_at: my_seen_at, confirmed_at: my_confirmed_at } }
}

/** Records that `userId` opened record `id` (the first time only); `created` on the first time. */
export async function upsertSeen(db: Db, tenantId: number, alias: string, id: number, userId: number) {
  const { rows } = await sql<{ seen_at: string; confirmed_at: string | null; created: boolean }>`
      insert into content_reads as cr (tenant_id, target_type, target_id, user_id) values (${tenantId}, ${alias}, ${id}, ${userId})
      on conflict (tenant_id, target_type, target_id, user_id) do update set seen_at = cr.seen_at
      returning seen_at, confirmed_at, (xmax = 0) as created`.execute(db)
  return rows[0]
}

/**
 * Records that `userId` confirmed record `id` at `at` (a confirmation is never taken back); `created`
 * when this confirmed it. The time is a value, not now(): Citus refuses a non-immutable function in
 * RETURNING and in ON CONFLICT's SET.
 */
export async function upsertConfirmation(
  trx: Db,
  tenantId: number,
  alias: string,
  id: number,
  userId: number,
  at: string,
) {
  const { rows } = await sql<{ seen_at: string; confirmed_at: string; created: boolean }>`
        insert into content_reads as cr (tenant_id, target_type, target_id, user_id, seen_at, confirmed_at)
          values (${tenantId}, ${alias}, ${id}, ${userId}, ${at}::timestamptz, ${at}::timestamptz)
        on conflict (tenant_id, target_type, target_id, user_id)
          do update set confirmed_at = coalesce(cr.confirmed_at, excluded.confirmed_at)
        returning seen_at, confirmed_at, (confirmed_at = ${at}::timestamptz) as created`.execute(trx)
  return rows[0]
}

/** Marks the unread notifications of `userId` about record `id` (of `alias`) read; their ids. */
export async function markNotificationsOfRecordRead(
  trx: Db,
  tenantId: number,
  userId: number,
  alias: string,
  id: number,
): Promise<Array<{ id: string }>> {
  const marked = await sql<{
    id: string
  }>`update notifications set read_at = now() where tenant_id = ${tenantId}
          and notifiable_type = 'user' and notifiable_id = ${userId}
          and targetable_type = ${alias} and targetable_id = ${id} and read_at is null returning id`.execute(trx)
  return marked.rows
}

/**
 * Claims the reminder of record `id` (none within 24 hours: one conditional update decides); when
 * not claimed, the seconds until the next may go out.
 */
export async function claimReminder(
  trx: Db,
  table: string,
  t: number,
  id: number,
): Promise<{ retry_after: number | null; claimed: boolean }> {
  const records = sql.table(table)
  const { rows: claimed } = await sql<{ retry_after: number | null; claimed: boolean }>`
      with claim as (
        update ${records} set reminded_at = now() where tenant_id = ${t} and id = ${id}
          and (reminded_at is null or reminded_at <= now() - interval '24 hours') returning id)
      select exists (select 1 from claim) as claimed,
        (select ceil(extract(epoch from (p.reminded_at + interval '24 hours' - now())))::int
          from ${records} p where p.tenant_id = ${t} and p.id = ${id}) as retry_after`.execute(trx)
  return claimed[0]
}

/** Inserts a reminder of record `id` (`actorId` null for the automatic one). */
export async function insertReminder(trx: Db, t: number, alias: string, id: number, actorId: number | null) {
  const { rows: created } = await sql<{ id: number; created_at: string }>`
      insert into content_reminders (tenant_id, target_type, target_id, actor_id)
      values (${t}, ${alias}, ${id}, ${actorId}) returning id, created_at`.execute(trx)
  return created[0]
}

/**
 * Records the recipients of reminder `reminderId`: the `audience` of record `id` that has not confirmed
 * it, but the actor; how many. One insert … select, routed whole to the tenant's shard on Citus (it
 * reads colocated tables and takes tenant_id from users).
 */
export async function insertPendingRecipients(
  trx: Db,
  t: number,
  alias: string,
  id: number,
  reminderId: number,
  actorId: number | null,
  audience: RawBuilder<{ id: number }>,
): Promise<number> {
  const reached = await sql`
      insert into content_reminder_recipients (tenant_id, reminder_id, user_id)
      select pu.tenant_id, ${reminderId}::bigint, pu.id from users pu
      where pu.tenant_id = ${t} and pu.id in (${audience})
        and not exists (select 1 from content_reads r where r.tenant_id = ${t} and r.target_type = ${alias}
          and r.target_id = ${id} and r.user_id = pu.id and r.confirmed_at is not null)
        and pu.id is distinct from ${actorId}::bigint`.execute(trx)
  return Number(reached.numAffectedRows ?? 0)
}

/** Stores how many users reminder `reminderId` reached. */
export async function updateReminderRecipients(trx: Db, t: number, reminderId: number, recipients: number) {
  await sql`update content_reminders set recipients = ${recipients}
      where tenant_id = ${t} and id = ${reminderId}`.execute(trx)
}
