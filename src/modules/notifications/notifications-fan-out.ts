import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import { enqueue } from '../../platform/jobs/jobs.js'
import { publish } from '../../platform/realtime/pg-pubsub.js'
import { sanitizeNotificationBody } from './notification-html.js'

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
const recipientsQueries = new Map<string, RecipientsQuery>()

/** Content modules register named recipients queries; a spec names one in `recipients.query`. */
export function registerRecipientsQuery(name: string, query: RecipientsQuery): void {
  recipientsQueries.set(name, query)
}

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
  const payload: FanOutPayload = { spec: { ...spec, data: { ...spec.data, body: sanitizeNotificationBody(spec.data.body) } } }
  await enqueue(trx, 'notifications:fan_out', payload, { key: `notifications:fan_out:${spec.sourceKey}`, maxAttempts: 10 })
}

function chunks<T>(items: T[], size: number): T[][] {
  const result: T[][] = []
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size))
  return result
}

/**
 * Creates the records of `spec`, set-based: each statement resolves up to CHUNK_SIZE recipients
 * (listed users ∪ department members; active, non-deleted, non-blacked-out personal accounts) and
 * inserts them with ON CONFLICT DO NOTHING, so a retry re-runs safely. Each chunk commits with its
 * realtime NOTIFY and its delivery job; an aborted `signal` stops it between chunks. Returns the number of records created.
 */
export async function fanOutNotifications(db: Db, spec: NotificationSpec, signal?: AbortSignal): Promise<number> {
  const userIds = [...new Set(spec.recipients.userIds ?? [])]
  const departmentIds = [...new Set(spec.recipients.departmentIds ?? [])]
  const named = spec.recipients.query
  const custom = named && recipientsQueries.get(named.name)
  if (named && !custom) throw new Error(`unknown recipients query "${named.name}"`)
  if (userIds.length === 0 && departmentIds.length === 0 && !custom) return 0
  const t = spec.tenantId
  const extra = custom ? sql`union select q.id from (${custom(t, named!.targetId)}) q` : sql``
  const except = spec.recipients.exceptUserIds ?? []
  let after = 0
  let created = 0
  for (;;) {
    const done = await db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ last_id: number | null; size: number; inserted_ids: number[] }>`
        with recipients as (
          select r.id from (
            select unnest(${userIds}::bigint[]) as id
            union
            select du.user_id from department_users du
            where du.tenant_id = ${t} and du.department_id = any(${departmentIds}::bigint[])
            ${extra}
          ) r
          join users u on u.tenant_id = ${t} and u.id = r.id
          where r.id > ${after} and not (r.id = any(${except}::bigint[])) and u.active and u.deleted_at is null and u.blacked_out_at is null and not u.group_account
          order by r.id
          limit ${CHUNK_SIZE}
        ), inserted as (
          insert into notifications (tenant_id, type, notifiable_type, notifiable_id, targetable_type, targetable_id, source_key, data)
          select ${t}, ${spec.type}, 'user', id, ${spec.targetableType}, ${spec.targetableId}, ${spec.sourceKey}, ${JSON.stringify(spec.data)}::jsonb
          from recipients
          on conflict (tenant_id, source_key, notifiable_id) do nothing
          returning notifiable_id
        )
        select (select max(id) from recipients) as last_id, (select count(*) from recipients)::int as size,
               coalesce((select array_agg(notifiable_id order by notifiable_id) from inserted), '{}') as inserted_ids`.execute(trx)
      const { last_id: lastId, size, inserted_ids: insertedIds } = rows[0]
      if (lastId === null) return true
      after = Number(lastId)
      if (insertedIds.length > 0) {
        created += insertedIds.length
        for (const batch of chunks(insertedIds.map(Number), NOTIFY_BATCH)) {
          const message: NotificationsChannelMessage = { tenantId: t, userIds: batch, sourceKey: spec.sourceKey }
          await publish(trx, NOTIFICATIONS_CHANNEL, message)
        }
        const delivery: DeliverPayload = { tenantId: t, sourceKey: spec.sourceKey, userIds: insertedIds.map(Number) }
        await enqueue(trx, 'notifications:deliver', delivery, { key: `notifications:deliver:${spec.sourceKey}:${insertedIds[0]}`, maxAttempts: 10 })
      }
      return size < CHUNK_SIZE
    })
    if (done) return created
    // shutting down: stop between committed chunks; the retried job resumes (inserts are idempotent)
    if (signal?.aborted) throw new Error(`fan-out ${spec.sourceKey} interrupted by shutdown after ${created} records; it resumes on retry`)
  }
}

export interface DeliverPayload {
  tenantId: number
  sourceKey: string
  userIds: number[]
}
