import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import type { Actor } from '../../platform/auth/actor.js'
import type { Db } from '../../platform/db/schema.js'
import { AppError } from '../../platform/http/errors.js'
import type { PubSub } from '../../platform/realtime/pg-pubsub.js'
import { openEventStream, type EventStream } from '../../platform/realtime/sse.js'
import { showResource } from '../../platform/query/run-query.js'
import * as queries from './notifications.queries.js'
import { NOTIFICATIONS_CHANNEL, type NotificationsChannelMessage } from './notifications-fan-out.js'
import { notificationResource } from './notifications.resource.js'

export type NotificationStreams = ReturnType<typeof createNotificationStreams>

/**
 * The SSE hub of one process: streams by tenant and user, fed by the cross-process channel. Work per
 * message is proportional to the streams open HERE for the users named, not to the recipients.
 */
export function createNotificationStreams({ db, pubsub, log, heartbeatMs }: { db: Db; pubsub: PubSub; log: Logger; heartbeatMs?: number }) {
  const streams = new Map<number, Map<number, Set<EventStream>>>()
  let subscribed: Promise<unknown> | undefined

  async function pushTo(tenantId: number, userId: number, targets: Set<EventStream>, sourceKey?: string) {
    if (sourceKey) {
      const base = queries.selectOwnNotifications(db, tenantId, userId).where('n.source_key', '=', sourceKey)
      const record = await showResource({ db, tenantId }, notificationResource, base, {}, 'Notification').catch(() => undefined)
      if (record) for (const stream of targets) stream.send('notification', record)
    }
    const unread = await queries.countUnreadNotifications(db, tenantId, userId)
    for (const stream of targets) stream.send('count', { unread })
  }

  function onMessage(payload: unknown) {
    const message = payload as NotificationsChannelMessage
    const tenant = streams.get(message?.tenantId)
    if (!tenant) return
    const userIds = message.userIds ?? [...tenant.keys()]
    for (const userId of userIds) {
      const targets = tenant.get(userId)
      if (!targets) continue
      pushTo(message.tenantId, userId, targets, message.sourceKey).catch((error) => log.warn({ err: error }, 'notification stream push failed'))
    }
  }

  function add(actor: Actor, stream: EventStream) {
    let tenant = streams.get(actor.tenantId)
    if (!tenant) streams.set(actor.tenantId, (tenant = new Map()))
    let set = tenant.get(actor.userId)
    if (!set) tenant.set(actor.userId, (set = new Set()))
    set.add(stream)
    stream.onClose(() => {
      set.delete(stream)
      if (set.size === 0) tenant.delete(actor.userId)
      if (tenant.size === 0) streams.delete(actor.tenantId)
    })
  }

  /** Opens the requester's stream: the current unread count first, then `notification`/`count` events. */
  async function open(actor: Actor, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    subscribed ??= pubsub.subscribe(NOTIFICATIONS_CHANNEL, onMessage).catch((error) => {
      subscribed = undefined
      throw error
    })
    try {
      await subscribed
    } catch (error) {
      log.error({ err: error }, 'cannot listen for notifications')
      throw new AppError(503, 'realtime_unavailable', 'Realtime notifications are temporarily unavailable', undefined, { 'Retry-After': '5' })
    }
    const unread = await queries.countUnreadNotifications(db, actor.tenantId, actor.userId)
    const stream = openEventStream(request, reply, { heartbeatMs })
    add(actor, stream)
    stream.send('count', { unread })
  }

  /** Ends every open stream (server shutdown), so that closing the server does not wait for clients. */
  function closeAll() {
    for (const tenant of streams.values()) for (const set of tenant.values()) for (const stream of set) stream.end()
  }

  return { open, closeAll }
}
