import fs from 'node:fs'
import type { AppDeps } from '../../platform/app-module.js'
import { enqueue } from '../../platform/jobs/jobs.js'
import { currentSigningKey } from '../../platform/keys/signing-keys.js'
import { SafeHttpClient, type OutboundResult, type ResolveHost } from '../../platform/outbound-http/safe-fetch.js'
import { retryAfterMs } from '../../platform/outbound-http/retry-after.js'
import { createHostSlots } from '../../platform/outbound-http/host-slots.js'
import * as queries from './automations.queries.js'
import { authHeaders } from './webhook-auth.js'
import { openWebhookSecrets, type WebhookConfig } from './webhook-config.js'
import { secretBoxFor } from '../../platform/secrets/secret-box.js'

export const DELIVER_WEBHOOK_JOB = 'automations:deliver_webhook'

/** One attempt of one delivery series; stale payloads (older series, attempt already made) are no-ops. */
export interface DeliverWebhookPayload {
  tenantId: number
  deliveryId: number
  series: number
  attempt: number
}

/** Contract 50: after a failed attempt wait 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; then `failed`. */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]
/** The whole exchange (connect, send, headers, capped body) must finish within 10 s. */
export const DELIVERY_TIMEOUT_MS = 10_000
export const RESPONSE_CAPTURE_BYTES = 4096
const MAX_RETRY_AFTER_MS = 36_000_000

const version = (() => {
  try {
    const { version }: { version?: unknown } = JSON.parse(
      fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
    )
    return typeof version === 'string' ? version : '0'
  } catch {
    return '0'
  }
})()
export const WEBHOOK_USER_AGENT = `workplace-api-webhooks/${version}`

export interface WebhookDelivererOptions {
  retryDelaysMs?: number[]
  timeoutMs?: number
  /** Parallel deliveries to one host across the fleet (default: half a worker's concurrency). */
  perHostConcurrency?: number
  /** How long a delivery waits for a free slot of its host before it is deferred (default 1 s). */
  hostSlotWaitMs?: number
  resolve?: ResolveHost
}

export type DeliveryOutcome = 'succeeded' | 'retrying' | 'failed' | 'skipped' | 'deferred'

interface AttemptResult {
  status: 'succeeded' | 'retrying' | 'failed'
  responseStatus: number | null
  responseTimeMs: number
  responseBody: string | null
  error: string | null
  retryAfterMs?: number
}

/** Classifies one exchange. 2xx succeeds; 3xx is never followed; 410 and blocked addresses are permanent. */
function judge(result: OutboundResult): AttemptResult {
  if (result.kind === 'error') {
    return {
      status: result.error === 'blocked_address' ? 'failed' : 'retrying',
      responseStatus: null,
      responseTimeMs: result.timeMs,
      responseBody: null,
      error: result.error,
    }
  }
  // eslint-disable-next-line no-control-regex -- NUL cannot be stored in a text column: stripped on purpose
  const responseBody = result.body.toString('utf8').replace(/\u0000/g, '')
  const base = { responseStatus: result.status, responseTimeMs: result.timeMs, responseBody }
  if (result.status >= 200 && result.status < 300) return { ...base, status: 'succeeded', error: null }
  if (result.status === 410) return { ...base, status: 'failed', error: 'gone' }
  const error = result.status >= 300 && result.status < 400 ? 'redirect_not_followed' : `http_${result.status}`
  return {
    ...base,
    status: 'retrying',
    error,
    retryAfterMs: retryAfterMs(result.headers['retry-after'], MAX_RETRY_AFTER_MS),
  }
}

/** Builds the `automations:deliver_webhook` handler: one attempt per job, the next one enqueued on failure. */
export function createWebhookDeliverer({ db, config, log }: AppDeps, options: WebhookDelivererOptions = {}) {
  const delays = options.retryDelaysMs ?? RETRY_DELAYS_MS
  const secrets = secretBoxFor(config.secrets)
  const perHost = options.perHostConcurrency ?? Math.max(1, Math.floor(config.jobs.concurrency / 2))
  const http = new SafeHttpClient({
    allowPrivateNetworks: config.webhooks.allowPrivateNetworks,
    timeoutMs: options.timeoutMs ?? DELIVERY_TIMEOUT_MS,
    maxResponseBytes: RESPONSE_CAPTURE_BYTES,
    resolve: options.resolve,
    connectionsPerOrigin: perHost,
  })
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS
  const slots = createHostSlots(db, { limit: perHost, leaseMs: timeoutMs + 5_000 })
  const slotWaitMs = options.hostSlotWaitMs ?? 1_000

  async function attempt(
    target: NonNullable<Awaited<ReturnType<typeof queries.findDeliveryForAttempt>>>,
    webhook: WebhookConfig,
  ): Promise<AttemptResult> {
    const method = webhook.method ?? 'POST'
    const body =
      method === 'GET'
        ? Buffer.alloc(0)
        : Buffer.from(
            JSON.stringify({
              id: target.event_id,
              type: target.event_type,
              timestamp: target.event_timestamp,
              tenant: target.tenant_slug,
              data: target.event_data,
            }),
          )
    const timestamp = Math.floor(Date.now() / 1000)
    // configured headers first; the platform's own headers replace same-named ones (case-insensitive)
    const headers = new Map<string, [string, string]>()
    const put = (name: string, value: string) => headers.set(name.toLowerCase(), [name, value])
    for (const [name, value] of Object.entries(webhook.headers ?? {})) put(name, value)
    if (method !== 'GET') put('content-type', 'application/json')
    put('user-agent', WEBHOOK_USER_AGENT)
    put('webhook-id', target.event_id)
    put('webhook-timestamp', String(timestamp))
    const auth = await authHeaders(webhook.auth, {
      url: webhook.url,
      method,
      body,
      webhookId: target.event_id,
      timestamp,
      tenantSlug: target.tenant_slug,
      issuer: config.baseUrl,
      signingKey: () => currentSigningKey(db, secrets),
    })
    for (const [name, value] of Object.entries(auth)) put(name, value)
    const result = await http.send(webhook.url, {
      method,
      headers: Object.fromEntries([...headers.values()]),
      body: method === 'GET' ? undefined : body,
    })
    return judge(result)
  }

  /** Performs the attempt a job payload names and records it; idempotent for repeated payloads. */
  async function deliver(payload: DeliverWebhookPayload): Promise<DeliveryOutcome> {
    const target = await queries.findDeliveryForAttempt(db, payload.tenantId, payload.deliveryId)
    if (!target || target.series !== payload.series || target.attempts >= payload.attempt) return 'skipped'
    if (target.status === 'succeeded' || target.status === 'failed') return 'skipped'
    const action = target.actions[target.action_index]
    if (!action || action.type !== 'webhook') {
      await queries.recordAttempt(db, payload, { status: 'failed', error: 'action_removed', nextAttemptAt: null })
      return 'failed'
    }
    // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- a stored config passed validateWebhookConfig when written
    const webhook = openWebhookSecrets(action.config as WebhookConfig, secrets)
    const host = new URL(webhook.url).host
    const slot = await slots.acquire(host, slotWaitMs)
    if (!slot) {
      // the host stays saturated: try again later without holding a worker slot or counting an attempt
      await enqueue(db, DELIVER_WEBHOOK_JOB, payload, { runAt: new Date(Date.now() + 500 + Math.random() * 1000) })
      return 'deferred'
    }
    let result: AttemptResult
    try {
      result = await attempt(target, webhook)
    } finally {
      await slot.release()
    }
    let status = result.status
    const delay = delays[payload.attempt - 1]
    if (status === 'retrying' && delay === undefined) status = 'failed'
    const waitMs = status === 'retrying' ? Math.max(delay, result.retryAfterMs ?? 0) : 0
    const nextAttemptAt = status === 'retrying' ? new Date(Date.now() + waitMs) : null
    const record = {
      status,
      error: result.error,
      nextAttemptAt,
      url: webhook.url,
      method: webhook.method ?? 'POST',
      responseStatus: result.responseStatus,
      responseTimeMs: result.responseTimeMs,
      responseBody: result.responseBody,
    }
    if (!nextAttemptAt)
      await queries.recordAttempt(db, payload, record) // final: one statement, no transaction
    else {
      await db.transaction().execute(async (trx) => {
        // the attempt and its successor commit together
        if (!(await queries.recordAttempt(trx, payload, record))) return
        const next = { ...payload, attempt: payload.attempt + 1 }
        await enqueue(trx, DELIVER_WEBHOOK_JOB, next, {
          runAt: nextAttemptAt,
          key: `webhook:${payload.deliveryId}:${payload.series}:${next.attempt}`,
        })
      })
    }
    log.info(
      {
        deliveryId: payload.deliveryId,
        attempt: payload.attempt,
        status,
        error: result.error ?? undefined,
        responseStatus: result.responseStatus ?? undefined,
      },
      'webhook delivery attempt',
    )
    return status
  }

  return { deliver, close: () => http.close() }
}

export type WebhookDeliverer = ReturnType<typeof createWebhookDeliverer>

/** Enqueues attempt 1 of a delivery series (in the caller's transaction). */
export function enqueueDeliveryAttempt(db: AppDeps['db'], payload: DeliverWebhookPayload) {
  return enqueue(db, DELIVER_WEBHOOK_JOB, payload, {
    key: `webhook:${payload.deliveryId}:${payload.series}:${payload.attempt}`,
  })
}
