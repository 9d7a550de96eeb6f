import type { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import type { Actor } from '../../../platform/auth/actor.js'
import type { Db } from '../../../platform/db/schema.js'
import { AppError } from '../../../platform/http/errors.js'
import type { PubSub } from '../../../platform/realtime/pg-pubsub.js'
import { openEventStream, type EventStream } from '../../../platform/realtime/sse.js'
import { isSyncChannelMessage, SYNC_CHANNEL } from '../../../platform/sync/change-log.js'
import { listResource } from '../../../platform/query/run-query.js'
import * as queries from '../notifications.queries.js'
import * as streamQueries from './stream.queries.js'
import { NOTIFICATIONS_CHANNEL, type NotificationsChannelMessage } from '../sending/fan-out.js'
import { notificationResource } from '../notifications.resource.js'
import {
  advancePosition,
  createdSeconds,
  formatPosition,
  parsePosition,
  SETTLE_SECONDS,
  type StreamPosition,
} from './position.js'

/** One open stream and where it stands (its events' ids). */
interface StreamState {
  stream: EventStream
  position: StreamPosition
}

const REPLAY_PAGE = 200

/** A list read with a `limit`: always a page of records, never a stream. */
function pageOf(list: Readable | Record<string, unknown>[]): Record<string, unknown>[] {
  if (!Array.isArray(list)) throw new Error('a list with a limit is read as a page')
  return list
}

/** A message of the notifications channel, as `publish` sent it (JSON over NOTIFY). */
function isChannelMessage(payload: unknown): payload is NotificationsChannelMessage {
  if (typeof payload !== 'object' || payload === null) return false
  const { tenantId, userIds, sourceKey } = payload as Partial<Record<keyof NotificationsChannelMessage, unknown>>
  return (
    typeof tenantId === 'number' &&
    (userIds === null || Array.isArray(userIds)) &&
    (sourceKey === undefined || typeof sourceKey === 'string')
  )
}

/** The shortest time between two "sync now" hints to one tenant's streams (a burst of writes is one hint, and one after it). */
const SYNC_HINT_MS = 1000

export type NotificationStreams = ReturnType<typeof createNotificationStreams>

/**
 * The SSE hub of one process: streams by tenant and user, fed by the cross-process channel. Work per
 * message is proportional to the streams open HERE for the users named, not to the recipients.
 */
export function createNotificationStreams({
  db,
  pubsub,
  log,
  heartbeatMs,
}: {
  db: Db
  pubsub: PubSub
  log: Logger
  heartbeatMs?: number
}) {
  const streams = new Map<number, Map<number, Set<StreamState>>>()
  let subscribed: Promise<unknown> | undefined

  /** Sends a record unless this stream already has it (live and replayed deliveries overlap). */
  function deliver(state: StreamState, record: Record<string, unknown>) {
    const id = String(record.id)
    if (state.position.delivered.has(id) || createdSeconds(record.created_at) < state.position.watermark) return
    advancePosition(state.position, id, createdSeconds(record.created_at))
    state.stream.send('notification', record, formatPosition(state.position))
  }

  /**
   * Sends the users' new record (when the message names a source key) and their unread count to their
   * open streams: two statements per message, whatever the number of users (a send to 500 users with
   * two tabs each was 1,000 statements, one per user and kind).
   */
  async function pushTo(
    tenantId: number,
    tenant: Map<number, Set<StreamState>>,
    userIds: number[],
    sourceKey?: string,
  ) {
    const records = new Map<number, Record<string, unknown>>()
    if (sourceKey) {
      const base = streamQueries.selectSourceNotifications(db, tenantId, userIds, sourceKey)
      const rows = pageOf(await listResource({ db, tenantId }, notificationResource, base, { limit: userIds.length }))
      for (const row of rows) records.set(Number(row.notifiable_id), row)
    }
    const unread = await queries.countUnreadNotificationsOf(db, tenantId, userIds)
    for (const userId of userIds) {
      const targets = tenant.get(userId)
      if (!targets) continue
      const record = records.get(userId)
      if (record) for (const state of targets) deliver(state, record)
      for (const state of targets)
        state.stream.send('count', { unread: unread.get(userId) ?? 0 }, formatPosition(state.position))
    }
  }

  function onMessage(payload: unknown) {
    if (!isChannelMessage(payload)) return
    const message = payload
    const tenant = streams.get(message.tenantId)
    if (!tenant) return
    const userIds = (message.userIds ?? [...tenant.keys()]).filter((userId) => tenant.has(userId))
    if (userIds.length === 0) return
    pushTo(message.tenantId, tenant, userIds, message.sourceKey).catch((error) =>
      log.warn({ err: error }, 'notification stream push failed'),
    )
  }

  /**
   * The "sync now" hint (issue 43, docs/sync.md): something of the change feed changed in the tenant, on
   * any node. Each of the tenant's streams open here gets one `sync` event (no id: it moves no resume
   * position) at most once a `SYNC_HINT_MS` window, so a client syncs with its cursor instead of polling.
   */
  const hintsHeld = new Map<number, 'sent' | 'again'>()
  function hintSync(tenantId: number) {
    const held = hintsHeld.get(tenantId)
    if (held) {
      hintsHeld.set(tenantId, 'again')
      return
    }
    for (const set of streams.get(tenantId)?.values() ?? []) for (const state of set) state.stream.send('sync', {})
    hintsHeld.set(tenantId, 'sent')
    setTimeout(() => {
      const again = hintsHeld.get(tenantId) === 'again'
      hintsHeld.delete(tenantId)
      if (again) hintSync(tenantId)
    }, SYNC_HINT_MS).unref()
  }
  function onSyncMessage(payload: unknown) {
    if (isSyncChannelMessage(payload) && streams.has(payload.tenant)) hintSync(payload.tenant)
  }

  function add(actor: Actor, state: StreamState) {
    let tenant = streams.get(actor.tenantId)
    if (!tenant) streams.set(actor.tenantId, (tenant = new Map()))
    let set = tenant.get(actor.userId)
    if (!set) tenant.set(actor.userId, (set = new Set()))
    set.add(state)
    state.stream.onClose(() => {
      set.delete(state)
      if (set.size === 0) tenant.delete(actor.userId)
      if (tenant.size === 0) streams.delete(actor.tenantId)
    })
  }

  /**
   * A fresh stream stands at "now": the user's records of the settle window count as delivered, so that
   * a reconnect replays only what is created from here on.
   */
  async function currentPosition(actor: Actor): Promise<StreamPosition> {
    const row = await streamQueries.findStreamStart(db, actor.tenantId, actor.userId, SETTLE_SECONDS)
    return { watermark: Number(row.now), delivered: new Map(row.recent.map((r) => [r.id, Number(r.created)])) }
  }

  /** A client's position, with the creation second of each record it names (so the watermark can pass them correctly). */
  async function resumedPosition(
    actor: Actor,
    resumed: { watermark: number; delivered: string[] },
  ): Promise<StreamPosition> {
    const rows =
      resumed.delivered.length === 0
        ? []
        : await streamQueries.selectCreatedSeconds(db, actor.tenantId, actor.userId, resumed.delivered)
    return { watermark: resumed.watermark, delivered: new Map(rows.map((r) => [r.id, Number(r.created)])) }
  }

  /** What a reconnecting client missed: records at or above its watermark that it was not sent, oldest first. */
  async function replay(actor: Actor, state: StreamState, seen: string[]): Promise<void> {
    const ctx = { db, tenantId: actor.tenantId }
    for (let offset = 0; ; offset += REPLAY_PAGE) {
      let base = streamQueries.selectOwnNotificationsFrom(db, actor.tenantId, actor.userId, state.position.watermark)
      if (seen.length > 0) base = base.where('n.id', 'not in', seen)
      const page = pageOf(
        await listResource(ctx, notificationResource, base, { sort: 'created_at,id', limit: REPLAY_PAGE, offset }),
      )
      for (const record of page) deliver(state, record)
      if (page.length < REPLAY_PAGE) return
    }
  }

  /**
   * Opens the requester's stream: the current unread count first, then `notification`/`count` events.
   * With `Last-Event-ID` (a reconnect, possibly to another node) the records created meanwhile come first.
   */
  async function open(actor: Actor, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const lastEventId = request.headers['last-event-id']
    const resumed = typeof lastEventId === 'string' && lastEventId !== '' ? parsePosition(lastEventId) : undefined
    subscribed ??= Promise.all([
      pubsub.subscribe(NOTIFICATIONS_CHANNEL, onMessage),
      pubsub.subscribe(SYNC_CHANNEL, onSyncMessage),
    ]).catch((error: unknown) => {
      subscribed = undefined
      throw error
    })
    try {
      await subscribed
    } catch (error) {
      log.error({ err: error }, 'cannot listen for notifications')
      throw new AppError(503, 'realtime_unavailable', 'Realtime notifications are temporarily unavailable', undefined, {
        'Retry-After': '5',
      })
    }
    const position: StreamPosition = resumed ? await resumedPosition(actor, resumed) : await currentPosition(actor)
    const unread = await queries.countUnreadNotifications(db, actor.tenantId, actor.userId)
    // listening before the replay query: a record committed in between arrives live, or replayed, once
    const state: StreamState = { stream: openEventStream(request, reply, { heartbeatMs }), position }
    add(actor, state)
    state.stream.send('count', { unread }, formatPosition(state.position))
    if (resumed) {
      // the response has begun: a failed replay ends the stream, and the client reconnects from where it stands
      await replay(actor, state, resumed.delivered).catch((error) => {
        log.warn({ err: error }, 'notification stream replay failed')
        state.stream.end()
      })
    }
  }

  /** Ends every open stream (server shutdown), so that closing the server does not wait for clients. */
  function closeAll() {
    for (const tenant of streams.values())
      for (const set of tenant.values()) for (const state of set) state.stream.end()
  }

  return { open, closeAll }
}
