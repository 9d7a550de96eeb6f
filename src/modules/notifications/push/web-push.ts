import type { Logger } from 'pino'
import webPush from 'web-push'
import type { Config } from '../../../config.js'
import type { Db } from '../../../platform/db/schema.js'
import { enqueue } from '../../../platform/jobs/jobs.js'
import { vapidKeys } from '../../../platform/keys/vapid-keys.js'
import { recordDelivery } from '../../../platform/metrics/index.js'
import { secretBoxFor } from '../../../platform/secrets/secret-box.js'
import { SafeHttpClient, type OutboundResult } from '../../../platform/outbound-http/safe-fetch.js'
import { retryAfterMs } from '../../../platform/outbound-http/retry-after.js'
import { groupBy } from '../../../platform/group-by.js'
import * as queries from './web-push.queries.js'

/** One new notification record of one user, as its devices receive it. */
export interface PushMessage {
  tenantId: number
  userId: number
  notificationId: string
  type: string
  title: string
  /** Plain text (HTML stripped), at most 1,000 characters. */
  body: string
  url: string
  createdAt: string
}

/**
 * A push channel: delivers each message to every device of its user. The Web Push driver below speaks
 * to browsers' push services; a mobile driver (FCM/APNs) implements the same interface
 * (docs/notifications-delivery.md).
 */
export interface PushSender {
  send(db: Db, messages: PushMessage[]): Promise<void>
}

export const PUSH_RETRY_JOB = 'notifications:push_retry'
export interface PushRetryPayload {
  tenantId: number
  notificationId: string
  subscriptionId: number
  attempt: number
}

/** Waits before attempts 2…6 (then the delivery is recorded as failed). */
const RETRY_DELAYS_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000]
const MAX_RETRY_AFTER_MS = 3_600_000
const PARALLEL_SENDS = 50
/** A VAPID JWT is valid for 12 h and reused for 1 h (RFC 8292 allows up to 24 h). */
const VAPID_JWT_LIFETIME_SECONDS = 12 * 60 * 60
const VAPID_JWT_REUSE_MS = 60 * 60 * 1000

interface Subscription {
  id: number
  user_id: number
  endpoint: string
  p256dh: string
  auth: string
}
type Outcome = {
  status: 'sent' | 'gone' | 'failed' | 'retrying'
  responseStatus: number | null
  error: string | null
  retryAfterMs?: number
}

/** RFC 8030: 201 accepted; 404/410 the subscription is gone; 429 and 5xx retry later; other answers are final. */
function judge(result: OutboundResult): Outcome {
  if (result.kind === 'error')
    return {
      status: result.error === 'blocked_address' ? 'failed' : 'retrying',
      responseStatus: null,
      error: result.error,
    }
  const base = { responseStatus: result.status }
  if (result.status >= 200 && result.status < 300) return { ...base, status: 'sent', error: null }
  if (result.status === 404 || result.status === 410) return { ...base, status: 'gone', error: `http_${result.status}` }
  if (result.status === 429 || result.status >= 500)
    return {
      ...base,
      status: 'retrying',
      error: `http_${result.status}`,
      retryAfterMs: retryAfterMs(result.headers['retry-after'], MAX_RETRY_AFTER_MS),
    }
  return { ...base, status: 'failed', error: `http_${result.status}` }
}

/** Runs `work` over `items`, at most `limit` at once. */
async function inParallel<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++])
    }),
  )
}

/**
 * Web Push (RFC 8030 delivery, RFC 8291 `aes128gcm` payload encryption, RFC 8292 VAPID) with the
 * `web-push` library, sent through the outbound SSRF guard. Every attempt is recorded in
 * `push_deliveries`; a retried job skips what was already attempted, so nothing is pushed twice.
 */
export function createWebPushSender({ config, log }: { config: Config; log: Logger }) {
  const box = secretBoxFor(config.secrets)
  const http = new SafeHttpClient({
    allowPrivateNetworks: config.push.allowPrivateNetworks,
    timeoutMs: 10_000,
    maxResponseBytes: 4096,
    connectionsPerOrigin: PARALLEL_SENDS,
  })
  const vapidHeaders = new Map<string, { authorization: string; renewAt: number }>()

  /**
   * The VAPID `Authorization` header for a push service (RFC 8292: one JWT per audience, valid up to
   * 24 h): signed once an hour per push service and key, not once per push (an ES256 signature was a
   * good part of each push's CPU).
   */
  function vapidAuthorization(endpoint: string, keys: { publicKey: string; privateKey: string }): string {
    const audience = new URL(endpoint).origin
    const cacheKey = `${audience} ${keys.publicKey}`
    const cached = vapidHeaders.get(cacheKey)
    if (cached && cached.renewAt > Date.now()) return cached.authorization
    const expiration = Math.floor(Date.now() / 1000) + VAPID_JWT_LIFETIME_SECONDS
    const { Authorization } = webPush.getVapidHeaders(
      audience,
      config.push.contact,
      keys.publicKey,
      keys.privateKey,
      'aes128gcm',
      expiration,
    ) as { Authorization: string }
    vapidHeaders.set(cacheKey, { authorization: Authorization, renewAt: Date.now() + VAPID_JWT_REUSE_MS })
    return Authorization
  }

  async function attempt(
    db: Db,
    message: PushMessage,
    subscription: Subscription,
    attemptNumber: number,
  ): Promise<void> {
    const keys = await vapidKeys(db, box)
    const payload = JSON.stringify({
      id: message.notificationId,
      type: message.type,
      title: message.title,
      body: message.body,
      url: message.url,
      created_at: message.createdAt,
    })
    const request = webPush.generateRequestDetails(
      { endpoint: subscription.endpoint, keys: { p256dh: subscription.p256dh, auth: subscription.auth } },
      payload,
      {
        headers: { Authorization: vapidAuthorization(subscription.endpoint, keys) },
        TTL: config.push.ttlSeconds,
        urgency: message.type.endsWith('Required') ? 'high' : 'normal',
        contentEncoding: 'aes128gcm',
      },
    )
    const outcome = judge(
      await http.send(request.endpoint, {
        method: request.method,
        headers: request.headers as Record<string, string>,
        body: request.body,
      }),
    )
    const delay = RETRY_DELAYS_MS[attemptNumber - 1]
    const status = outcome.status === 'retrying' && delay === undefined ? 'failed' : outcome.status
    const recorded = {
      tenant_id: message.tenantId,
      subscription_id: subscription.id,
      notification_id: message.notificationId,
      attempt: attemptNumber,
      status,
      response_status: outcome.responseStatus,
      error: outcome.error,
    }
    // the common outcome is one statement; pruning a subscription or scheduling a retry commits with its record
    if (status !== 'gone' && status !== 'retrying') await queries.insertPushDelivery(db, recorded)
    else
      await db.transaction().execute(async (trx) => {
        await queries.insertPushDelivery(trx, recorded)
        if (status === 'gone') await queries.deleteSubscription(trx, message.tenantId, subscription.id)
        if (status === 'retrying') {
          const next: PushRetryPayload = {
            tenantId: message.tenantId,
            notificationId: message.notificationId,
            subscriptionId: subscription.id,
            attempt: attemptNumber + 1,
          }
          await enqueue(trx, PUSH_RETRY_JOB, next, {
            runAt: new Date(Date.now() + Math.max(delay, outcome.retryAfterMs ?? 0)),
            key: `push:${message.notificationId}:${subscription.id}:${next.attempt}`,
          })
        }
      })
    recordDelivery('push', status)
    if (status !== 'sent')
      log.info(
        {
          notificationId: message.notificationId,
          subscriptionId: subscription.id,
          attempt: attemptNumber,
          status,
          error: outcome.error,
        },
        'push delivery attempt',
      )
  }

  const sender: PushSender = {
    async send(db, messages) {
      if (messages.length === 0) return
      const tenantId = messages[0].tenantId
      const subscriptions = await queries.selectSubscriptionsOfUsers(db, tenantId, [
        ...new Set(messages.map((m) => m.userId)),
      ])
      if (subscriptions.length === 0) return
      const attempted = new Set(
        (
          await queries.selectAttemptedDeliveries(
            db,
            tenantId,
            messages.map((m) => m.notificationId),
          )
        ).map((r) => `${r.notification_id}:${r.subscription_id}`),
      )
      const byUser = groupBy(subscriptions, (s): number => s.user_id)
      const work = messages.flatMap((m) =>
        (byUser.get(m.userId) ?? [])
          .filter((s) => !attempted.has(`${m.notificationId}:${s.id}`))
          .map((s) => ({ m, s })),
      )
      await inParallel(work, PARALLEL_SENDS, ({ m, s }) => attempt(db, m, s, 1))
    },
  }

  /** A later attempt of one (notification, subscription); nothing when either is gone or it was attempted. */
  async function retry(
    db: Db,
    payload: PushRetryPayload,
    load: (db: Db, tenantId: number, notificationId: string) => Promise<PushMessage | undefined>,
  ): Promise<void> {
    const subscription = await queries.findSubscription(db, payload.tenantId, payload.subscriptionId)
    const message = subscription && (await load(db, payload.tenantId, payload.notificationId))
    if (!subscription || !message) return
    const done = await queries.findDeliveryAttempt(
      db,
      payload.tenantId,
      payload.notificationId,
      payload.subscriptionId,
      payload.attempt,
    )
    if (!done) await attempt(db, message, subscription, payload.attempt)
  }

  return { sender, retry, close: () => http.close() }
}
