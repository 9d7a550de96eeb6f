/**
 * Issue 41's figures beyond the S scenarios: the reach CSV of a post whose audience is the whole
 * 100,000-user tenant, streamed (rows, time, peak RSS growth of the API: flat memory), and publishing
 * a confirmation-required post to that audience (201 → both notification records of every reader, by
 * the job worker; contract 90's fan-out target, 100,000 records in 10 s, for each). `--quick`: the small seed.
 */
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../src/platform/db/schema.js'
import type { SeededTenant } from './seed.js'
import { errorMessage, pollUntil } from './wait.js'
import { waitForIdleQueue } from './worker.js'
import { benchPostRow } from './scenarios.js'

type Row = Record<string, unknown>

/** The notifications publishing a confirmation-required post sends to each reader (contract 30/40). */
const NOTICES = ['infoboardPostCreated', 'infoboardPostReadingConfirmationRequired']

export interface ReadingContext {
  db: Db
  apiUrl: string
  tenant: SeededTenant
  rssMb: (pid: number) => Promise<number>
}

const auth = (tenant: SeededTenant) => ({ authorization: `Bearer ${tenant.adminToken}` })

/** The seeded post every active user may read (bench/seed.ts) and its channel. */
async function reachPost(db: Db, tenant: SeededTenant): Promise<{ id: number; channel_id: number }> {
  const post = await benchPostRow(db, tenant, true)
  if (!post) throw new Error('the seed has no reach post')
  return post
}

/** `GET …/reach/users` as CSV, read to the end while the API's RSS is sampled every 50 ms. */
export async function measureReachCsv(ctx: ReadingContext, apiPid: number): Promise<Row> {
  const base = { id: 'reach-csv', request: 'GET /api/infoboard/posts/{id}/reach/users (Accept: text/csv)' }
  try {
    const post = await reachPost(ctx.db, ctx.tenant)
    const before = await ctx.rssMb(apiPid)
    let peak = before
    const sampler = setInterval(() => void ctx.rssMb(apiPid).then((mb) => (peak = Math.max(peak, mb))), 50)
    const t0 = performance.now()
    const response = await fetch(`${ctx.apiUrl}/api/infoboard/posts/${post.id}/reach/users`, {
      headers: { ...auth(ctx.tenant), accept: 'text/csv' },
    })
    let lines = 0
    let bytes = 0
    let firstByte = 0
    const decoder = new TextDecoder()
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      if (!firstByte) firstByte = Math.round(performance.now() - t0)
      bytes += chunk.length
      lines += decoder.decode(chunk, { stream: true }).split('\n').length - 1
    }
    clearInterval(sampler)
    const ms = Math.round(performance.now() - t0)
    if (response.status !== 200) return { ...base, pass: false, error: `answered ${response.status}` }
    const growth = Number((peak - before).toFixed(1))
    const row = {
      ...base,
      rows: lines - 1,
      first_byte_ms: firstByte,
      total_ms: ms,
      bytes,
      rss_growth_mb: growth,
      target: '< 100 MB',
      pass: growth < 100,
    }
    console.log(
      `reach-csv      ${row.rows} rows, ${(bytes / 1e6).toFixed(1)} MB in ${ms} ms (first byte ${firstByte} ms), RSS growth ${growth} MB`,
    )
    return row
  } catch (error) {
    return { ...base, pass: false, error: errorMessage(error) }
  }
}

/** Publishes a confirmation-required post in the reach post's channel and waits for every reader's record. */
export async function measurePublish(ctx: ReadingContext): Promise<Row> {
  const { db, tenant } = ctx
  const targetMs = NOTICES.length * 10_000
  const base = {
    id: 'publish',
    request: `POST /api/infoboard/posts (published now, confirmation required) to all ${tenant.counts.users.toLocaleString('en-US')} users`,
    target: `< ${targetMs} ms`,
  }
  try {
    await waitForIdleQueue(db)
    const post = await reachPost(db, tenant)
    const title = `Bench publish ${randomBytes(4).toString('hex')}`
    const t0 = performance.now()
    const response = await fetch(`${ctx.apiUrl}/api/infoboard/posts`, {
      method: 'POST',
      headers: { ...auth(tenant), 'content-type': 'application/json' },
      body: JSON.stringify({
        channel_id: post.channel_id,
        title,
        body: '<p>Benchmark: please confirm</p>',
        requires_reading_confirmation: true,
      }),
    })
    const createdMs = Math.round(performance.now() - t0)
    if (response.status !== 201)
      return { ...base, pass: false, error: `answered ${response.status}: ${(await response.text()).slice(0, 200)}` }
    const { id } = (await response.json()) as { id: number }
    const reach = (await (
      await fetch(`${ctx.apiUrl}/api/infoboard/posts/${id}/reach`, { headers: auth(tenant) })
    ).json()) as { audience: number }
    // the author is not notified of their own post
    // a confirmation-required post is two notifications per reader (contract 30/40: created, and
    // confirmation required): both fan-outs are counted, on the unique index by their source keys
    // `<type>:<post>:<published event>`; the target is the fan-out rate's (100,000 records in 10 s) for both
    const { rows: events } = await sql<{ id: string }>`select id from domain_events
      where tenant_id = ${tenant.tenantId} and type = 'infoboard.post.published' and subject_id = ${String(id)}`.execute(
      db,
    )
    if (!events[0]) return { ...base, pass: false, error: 'no infoboard.post.published event was recorded' }
    const sourceKeys = NOTICES.map((type) => `${type}:${id}:${events[0].id}`)
    const expected = NOTICES.length * (reach.audience - 1)
    const outcome = await pollUntil(
      async () => {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from notifications
          where tenant_id = ${tenant.tenantId} and source_key = any(${sourceKeys}::text[])`.execute(db)
        return rows[0].n
      },
      (n) => n >= expected,
      { intervalMs: 20, timeoutMs: 60_000 },
    )
    const ms = Math.round(outcome.at - t0)
    const row = { ...base, recipients: expected, records: outcome.value, accepted_ms: createdMs, ms }
    console.log(`publish        ${ms} ms until ${outcome.value}/${expected} records (201 after ${createdMs} ms)`)
    if (!outcome.done) return { ...row, pass: false, error: `${outcome.value} of ${expected} records after 60 s` }
    return { ...row, records_per_s: Math.round(expected / (ms / 1000)), pass: ms < targetMs }
  } catch (error) {
    return { ...base, pass: false, error: errorMessage(error) }
  }
}
