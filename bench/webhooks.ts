/**
 * Contract 90 "Webhooks": deliveries per second to a local receiver with `secret` signing (≥ 500/s).
 * An automation with one webhook action (Standard Webhooks secret) is created through the API; a
 * warm-up `…/test` delivery checks the path end to end; then N events are triggered set-based —
 * what a committed domain event does (contract 50's transactional outbox): one `webhook_deliveries`
 * row and one `automations:deliver_webhook` job per event, all in one statement — and the time from
 * that statement until the receiver has counted N distinct `webhook-id`s gives the rate.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { sql } from 'kysely'
import type { Db } from '../src/platform/db/schema.js'
import { DELIVER_WEBHOOK_JOB, type DeliverWebhookPayload } from '../src/modules/automations/webhook-delivery.job.js'
import type { SeededTenant } from './seed.js'
import { errorMessage, pollUntil } from './wait.js'
import { waitForIdleQueue } from './worker.js'

type Row = Record<string, unknown>

export interface WebhooksContext {
  db: Db
  apiUrl: string
  tenant: SeededTenant
  /** Events triggered (2,000 full, 1,000 quick: enough for a steady rate). */
  events: number
}

const TARGET_PER_S = 500
const TIMEOUT_MS = 60_000
/** The synthetic events' type (any type the automation listens to; nothing else in the bench emits it). */
const EVENT_TYPE = 'user.updated'

/** The keys `triggerEvents` writes into each job payload: tsc fails here when the payload type changes. */
export const PAYLOAD_KEYS = { tenantId: true, deliveryId: true, series: true, attempt: true } satisfies Record<
  keyof DeliverWebhookPayload,
  true
>

/** A plain node:http receiver: answers 200, counts distinct `webhook-id`s with a valid `webhook-signature`. */
class Receiver {
  readonly ids = new Set<string>()
  /** `performance.now()` of each first delivery of an id, in arrival order. */
  readonly arrivals: number[] = []
  badSignatures = 0
  private readonly key: Buffer
  private readonly server: http.Server

  constructor(secret: string) {
    this.key = Buffer.from(secret.slice('whsec_'.length), 'base64')
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        this.record(request.headers, Buffer.concat(chunks))
        response.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
      })
    })
  }

  private record(headers: http.IncomingHttpHeaders, body: Buffer): void {
    const id = headers['webhook-id']
    const timestamp = headers['webhook-timestamp']
    const signature = headers['webhook-signature']
    if (
      typeof id !== 'string' ||
      typeof timestamp !== 'string' ||
      typeof signature !== 'string' ||
      !this.verify(id, timestamp, body, signature)
    ) {
      this.badSignatures++
      return
    }
    if (this.ids.has(id)) return
    this.ids.add(id)
    this.arrivals.push(performance.now())
  }

  /** Standard Webhooks: `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>` (space-separated list). */
  private verify(id: string, timestamp: string, body: Buffer, header: string): boolean {
    const expected = Buffer.from(
      createHmac('sha256', this.key).update(`${id}.${timestamp}.`).update(body).digest('base64'),
    )
    return header.split(' ').some((part) => {
      const [version, mac] = part.split(',')
      const given = Buffer.from(mac ?? '')
      return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected)
    })
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`
  }

  reset(): void {
    this.ids.clear()
    this.arrivals.length = 0
    this.badSignatures = 0
  }

  close(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
}

interface ApiCall {
  status: number
  json: any
}

async function api(ctx: WebhooksContext, method: string, path: string, body?: unknown): Promise<ApiCall> {
  const response = await fetch(ctx.apiUrl + path, {
    method,
    headers: {
      authorization: `Bearer ${ctx.tenant.adminToken}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  })
  const text = await response.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = text
  }
  return { status: response.status, json }
}

async function createAutomation(ctx: WebhooksContext, url: string, secret: string): Promise<number> {
  const created = await api(ctx, 'POST', '/api/administration/automations', {
    name: 'Bench webhook',
    event: EVENT_TYPE,
    actions: [
      { type: 'webhook', config: { url, method: 'POST', headers: {}, auth: { type: 'secret', secret: { secret } } } },
    ],
  })
  const id = created.json?.data?.id ?? created.json?.id
  if (created.status !== 201 || typeof id !== 'number')
    throw new Error(`creating the automation answered ${created.status}: ${JSON.stringify(created.json).slice(0, 300)}`)
  return id
}

/** One synthetic `automation.test` delivery through the API; resolves when the receiver got it. */
async function warmUp(ctx: WebhooksContext, receiver: Receiver, automationId: number): Promise<void> {
  const test = await api(ctx, 'POST', `/api/administration/automations/${automationId}/test`)
  if (test.status !== 202)
    throw new Error(`the test delivery answered ${test.status}: ${JSON.stringify(test.json).slice(0, 300)}`)
  const outcome = await pollUntil(
    async () => receiver.ids.size,
    (n) => n >= 1,
    { intervalMs: 20, timeoutMs: 15_000 },
  )
  if (!outcome.done)
    throw new Error(
      `the test delivery did not reach the receiver within 15 s (bad signatures: ${receiver.badSignatures})`,
    )
}

/**
 * N events at once, set-based, as `createDeliveries` records them for a committed domain event: a
 * delivery row per event and its first attempt job (payload `DeliverWebhookPayload`, same job key).
 */
async function triggerEvents(
  db: Db,
  tenantId: number,
  automationId: number,
  url: string,
  events: number,
): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    with deliveries as (
      insert into webhook_deliveries (tenant_id, automation_id, action_index, event_id, event_type, event_timestamp, event_data, url, method)
      select ${tenantId}, ${automationId}, 0, gen_random_uuid(), ${EVENT_TYPE},
        to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        jsonb_build_object('subject_type', 'user', 'subject_id', g, 'actor_id', null, 'bench', true), ${url}, 'POST'
      from generate_series(1, ${events}) g
      returning id, series
    )
    select count(*)::int as n from graphile_worker.add_jobs((
      select array_agg(row(${DELIVER_WEBHOOK_JOB}::text,
        json_build_object('tenantId', ${tenantId}::bigint, 'deliveryId', id, 'series', series, 'attempt', 1),
        null, null, null, 'webhook:' || id || ':' || series || ':1', null, null)::graphile_worker.job_spec)
      from deliveries))`.execute(db)
  return rows[0].n
}

/** The measurement proper: the row's figures, or `pass: false` with an `error`. */
async function measure(ctx: WebhooksContext, receiver: Receiver, secret: string): Promise<Row> {
  const url = await receiver.listen()
  const automationId = await createAutomation(ctx, url, secret)
  await warmUp(ctx, receiver, automationId)
  // warm-up burst, untimed (like the scenarios' warm-up): every worker slot, pooled connection and
  // keep-alive socket is in use once, so the timed burst measures the steady rate
  const warmUpEvents = Math.max(100, Math.round(ctx.events / 10))
  receiver.reset()
  await triggerEvents(ctx.db, ctx.tenant.tenantId, automationId, url, warmUpEvents)
  await pollUntil(
    async () => receiver.ids.size,
    (n) => n >= warmUpEvents,
    { intervalMs: 20, timeoutMs: TIMEOUT_MS },
  )
  await waitForIdleQueue(ctx.db)
  receiver.reset()
  const t0 = performance.now()
  const queued = await triggerEvents(ctx.db, ctx.tenant.tenantId, automationId, url, ctx.events)
  if (queued !== ctx.events) return { pass: false, error: `queued ${queued} of ${ctx.events} deliveries` }
  const outcome = await pollUntil(
    async () => receiver.ids.size,
    (n) => n >= ctx.events,
    { intervalMs: 10, timeoutMs: TIMEOUT_MS },
  )
  const delivered = outcome.value
  const result: Row = { deliveries: delivered, bad_signatures: receiver.badSignatures }
  if (!outcome.done)
    return {
      ...result,
      pass: false,
      error: `${delivered} of ${ctx.events} deliveries after ${TIMEOUT_MS / 1000} s (bad signatures: ${receiver.badSignatures})`,
    }
  const seconds = (receiver.arrivals[delivered - 1] - t0) / 1000
  const rate = Math.round(delivered / seconds)
  // where the time goes: a steady rate puts half the deliveries at half the time; a long tail does not
  const after = (share: number) => Math.round(receiver.arrivals[Math.ceil(share * delivered) - 1] - t0)
  return {
    ...result,
    ms: Math.round(seconds * 1000),
    rate,
    half_ms: after(0.5),
    p90_ms: after(0.9),
    pass: rate >= TARGET_PER_S && receiver.badSignatures === 0,
  }
}

/** Runs the measurement with its own receiver; any failure becomes a failed row. */
export async function measureWebhooks(ctx: WebhooksContext): Promise<Row> {
  const base: Row = {
    id: 'webhooks',
    request: `${ctx.events.toLocaleString('en-US')} webhook deliveries (secret signing) to a local receiver`,
    target: `≥ ${TARGET_PER_S}/s`,
  }
  const secret = `whsec_${randomBytes(24).toString('base64')}`
  const receiver = new Receiver(secret)
  let row: Row
  try {
    row = { ...base, ...(await measure(ctx, receiver, secret)) }
  } catch (error) {
    row = { ...base, pass: false, error: errorMessage(error) }
  } finally {
    await receiver.close()
  }
  const figure =
    row.rate !== undefined
      ? `${row.deliveries} deliveries in ${row.ms} ms: ${row.rate}/s (50% after ${row.half_ms} ms, 90% after ${row.p90_ms} ms), bad signatures ${row.bad_signatures}`
      : `FAILED: ${row.error}`
  console.log(`${'webhooks'.padEnd(14)} ${figure} (target ${row.target})`)
  return row
}
