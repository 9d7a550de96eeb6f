import type { RawBuilder } from 'kysely'
import { composedTable } from '../../../platform/composition.js'
import type { Db } from '../../../platform/db/schema.js'
import { enqueue, enqueueSql } from '../../../platform/jobs/jobs.js'
import { publish, publishSql } from '../../../platform/realtime/pg-pubsub.js'
import { wakeSyncListeners } from '../../../platform/sync/change-log.js'
import { sanitizeNotificationBody } from './body-html.js'
import * as queries from './fan-out.queries.js'

/** Realtime channel: `{tenantId, userIds (null = everyone of the tenant), sourceKey?}`. */
export const NOTIFICATIONS_CHANNEL = 'workplace_notifications'
export interface NotificationsChannelMessage {
  tenantId: number
  userIds: number[] | null
  /** Set when new records were created: the stream sends them as `notification` events. */
  sourceKey?: string
}

/** What a producing module asks for: one record per resolved recipient. */
export interface NotificationSpec {
  tenantId: number
  type: string
  targetableType: string
  targetableId: number
  /** Names the producing event (e.g. `infoboardPost:12:updated:<eventId>`): one record per recipient per key. */
  sourceKey: string
  data: { title: string; body: string; url: string }
  recipients: {
    userIds?: number[]
    departmentIds?: number[]
    /** A registered recipients query (e.g. "users who can view infoboardPost 12"), resolved in SQL at fan-out. */
    query?: { name: string; targetId: number }
    /** Never these users (e.g. the author of the content). */
    exceptUserIds?: number[]
  }
}

/** SQL selecting the `id` of recipient users of a tenant for one target (set-based, never a JS loop). */
export type RecipientsQuery = (tenantId: number, targetId: number) => RawBuilder<{ id: number }>

declare module '../../../platform/app-module.js' {
  interface AppModule {
    /** Named recipients queries of this module's content; a spec names one in `recipients.query`. */
    recipientsQueries?: Record<string, RecipientsQuery>
  }
}

const recipientsQueries = composedTable(
  (modules) => new Map(modules.flatMap((module) => Object.entries(module.recipientsQueries ?? {}))),
)

export type FanOutPayload = { genericNotificationId: number; tenantId: number } | { spec: NotificationSpec }

/** Recipients per insert statement and per delivery job. */
const CHUNK_SIZE = 1000
/** User IDs per NOTIFY message (8000-byte payload limit). */
const NOTIFY_BATCH = 400

/**
 * Queues a fan-out in the caller's transaction: content modules call this next to the change that
 * produces the notification, so the notification exists iff the change commits.
 */
export async function enqueueNotifications(trx: Db, spec: NotificationSpec): Promise<void> {
  const payload: FanOutPayload = {
    spec: { ...spec, data: { ...spec.data, body: sanitizeNotificationBody(spec.data.body) } },
  }
  await enqueue(trx, 'notifications:fan_out', payload, {
    key: `notifications:fan_out:${spec.sourceKey}`,
    maxAttempts: 10,
  })
}

function chunks<T>(items: T[], size: number): T[][] {
  const result: T[][] = []
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size))
  return result
}

/**
 * Creates the records of `spec`, set-based: the recipients are resolved once, then inserted
 * CHUNK_SIZE per statement with ON CONFLICT DO NOTHING, so a retry re-runs safely. Each chunk commits
 * with its realtime NOTIFY and its delivery job; an aborted `signal` stops it between chunks. Returns
 * the number of records created.
 */
export async function fanOutNotifications(db: Db, spec: NotificationSpec, signal?: AbortSignal): Promise<number> {
  const named = spec.recipients.query
  const custom = named && recipientsQueries().get(named.name)
  if (named && !custom) throw new Error(`unknown recipients query "${named.name}"`)
  if (!spec.recipients.userIds?.length && !spec.recipients.departmentIds?.length && !custom) return 0
  let created = 0
  for (const [index, recipients] of chunks(await queries.selectRecipientIds(db, spec, custom), CHUNK_SIZE).entries()) {
    // shutting down: stop between committed chunks; the retried job resumes (inserts are idempotent)
    if (index > 0 && signal?.aborted)
      throw new Error(`fan-out ${spec.sourceKey} interrupted by shutdown after ${created} records; it resumes on retry`)
    await db.transaction().execute(async (trx) => {
      created += await insertRecords(trx, spec, recipients)
    })
  }
  return created
}

/**
 * A fan-out to a few listed users, done in the caller's transaction (the send itself): the records
 * exist when the send is answered, and no fan-out job has to be fetched and run for them. Larger or
 * department-wide sends go through the `notifications:fan_out` job (chunked, resumable).
 */
export async function fanOutInTransaction(trx: Db, spec: NotificationSpec): Promise<number> {
  // the recipients read first, then their records inserted: two statements Citus routes whole (an
  // insert … select filling the id's default, a volatile function, it evaluates on the coordinator)
  const recipients = await queries.selectRecipientIds(trx, spec, undefined)
  return recipients.length === 0 ? 0 : insertRecords(trx, spec, recipients)
}

/**
 * Inserts the records of one chunk of recipients (idempotent) with their change records for offline
 * clients and, in one more statement, its realtime NOTIFY and its delivery job, all in `trx`.
 */
async function insertRecords(trx: Db, spec: NotificationSpec, recipients: number[]): Promise<number> {
  const rows = await queries.insertRecordRows(trx, spec, recipients)
  if (rows.length === 0) return 0
  const insertedIds = rows.map((row) => Number(row.user_id)).sort((a, b) => a - b)
  const notices = recordNotices(spec, insertedIds).map((message) => publishSql(NOTIFICATIONS_CHANNEL, message))
  await queries.selectSignals(trx, queries.selectListItems([...notices, deliveryJobSql(spec, insertedIds)]))
  return insertedIds.length
}

/** The realtime messages of the records created for `insertedIds` (ascending). */
function recordNotices(spec: NotificationSpec, insertedIds: number[]): NotificationsChannelMessage[] {
  return chunks(insertedIds, NOTIFY_BATCH).map((batch) => ({
    tenantId: spec.tenantId,
    userIds: batch,
    sourceKey: spec.sourceKey,
  }))
}

/** SQL select-list item: the delivery job of the records created for `insertedIds` (ascending). */
function deliveryJobSql(spec: NotificationSpec, insertedIds: number[]): RawBuilder<unknown> {
  const delivery: DeliverPayload = { tenantId: spec.tenantId, sourceKey: spec.sourceKey, userIds: insertedIds }
  return enqueueSql('notifications:deliver', delivery, {
    key: `notifications:deliver:${spec.sourceKey}:${insertedIds[0]}`,
    maxAttempts: 10,
  })
}

/**
 * The records of a new send to listed users only, as parts of one statement that also writes the send
 * (decision 0005, sixth pass): `allRecipients` holds when every listed user is a recipient, so that the
 * records are exactly theirs, known before the insert; `insert` writes them when `onlyIf` holds, and
 * `job` is the select-list item of their delivery job. `announce` sends their realtime messages and
 * wakes the long polls, once the statement has committed (decision 0029).
 */
export function listedRecordsWrite(db: Db, spec: NotificationSpec) {
  const userIds = [...new Set(spec.recipients.userIds ?? [])].sort((a, b) => a - b)
  if (userIds.length === 0 || spec.recipients.departmentIds?.length || spec.recipients.query)
    throw new Error('listedRecordsWrite: a send to listed users only')
  const notices = recordNotices(spec, userIds)
  return {
    ...queries.listedRecordsSql(spec, userIds.length),
    job: deliveryJobSql(spec, userIds),
    announce: async () => {
      await Promise.all([
        ...notices.map((message) => publish(db, NOTIFICATIONS_CHANNEL, message)),
        wakeSyncListeners(db, spec.tenantId),
      ])
    },
  }
}

export interface DeliverPayload {
  tenantId: number
  sourceKey: string
  userIds: number[]
}
