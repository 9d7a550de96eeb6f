/**
 * Issue 15's notification latencies, against the API process that runs the job worker too (as `npm start`):
 * - `S14-record`: `POST /api/notifications` to one user, one send at a time: the time from sending the
 *   POST until the notification record exists (a poll every 2 ms on the bench's own connection);
 * - `S13`: 1,000 SSE streams open (500 users × 2), one generic notification to all 500 users: the time
 *   from the POST's 202 until every stream has received the `notification` event, per round.
 */
import http from 'node:http'
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../src/platform/db/schema.js'
import { readEventStream } from '../test/helpers/sse.js'
import { seedUserTokens, type SeededTenant } from './seed.js'
import { errorMessage, pollUntil, sleep } from './wait.js'
import { waitForIdleQueue } from './worker.js'

type Row = Record<string, unknown>

interface Context {
  db: Db
  apiUrl: string
  tenant: SeededTenant
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
}
const round1 = (n: number) => Number(n.toFixed(1))

async function send(ctx: Context, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${ctx.apiUrl}/api/notifications`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ctx.tenant.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
}

/** Records of the send titled `title` (a send's records carry `source_key = genericNotification:<id>`). */
async function recordsOf(db: Db, tenantId: number, title: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from notifications n
    where n.tenant_id = ${tenantId} and n.source_key = (select 'genericNotification:' || g.id from generic_notifications g
      where g.tenant_id = ${tenantId} and g.title = ${title} limit 1)`.execute(db)
  return rows[0].n
}

/** S14-record: time from the POST until the one record exists, `sends` sends one after another. */
export async function measureRecordLatency(ctx: Context & { sends: number }): Promise<Row> {
  const request = `POST /api/notifications to one user → record exists (${ctx.sends} sends, one at a time; p99 column: max)`
  try {
    const times: number[] = []
    const accepted: number[] = []
    for (let i = 0; i < ctx.sends; i++) {
      const title = `Bench record latency ${randomBytes(4).toString('hex')}`
      const t0 = performance.now()
      const response = await send(ctx, {
        title,
        body: '<p>Benchmark</p>',
        url: '/bench/record',
        user_ids: [ctx.tenant.userId],
      })
      accepted.push(performance.now() - t0)
      if (response.status !== 202) throw new Error(`POST answered ${response.status}: ${await response.text()}`)
      const outcome = await pollUntil(
        () => recordsOf(ctx.db, ctx.tenant.tenantId, title),
        (n) => n >= 1,
        { intervalMs: 2, timeoutMs: 10_000 },
      )
      if (!outcome.done) throw new Error(`send ${i + 1}: no record within 10 s`)
      times.push(outcome.at - t0)
      await sleep(20)
    }
    const row = {
      id: 'S14-record',
      request,
      p50: round1(percentile(times, 50)),
      p99: round1(Math.max(...times)),
      ms: round1(percentile(times, 50)),
      post_p50_ms: round1(percentile(accepted, 50)),
      max_ms: round1(Math.max(...times)),
      status: 'reported',
    }
    console.log(
      `S14-record record exists after p50 ${row.p50} ms, max ${row.max_ms} ms (the 202 itself: p50 ${row.post_p50_ms} ms)`,
    )
    return row
  } catch (error) {
    console.log(`S14-record FAILED: ${errorMessage(error)}`)
    return { id: 'S14-record', request, pass: false, error: errorMessage(error) }
  }
}

interface OpenStream {
  userId: number
  request: http.ClientRequest
  seen: Map<string, number>
}

/** Opens one SSE stream; resolves once its first event (the unread count) arrived. */
function openStream(
  apiUrl: string,
  userId: number,
  token: string,
  onTitle: (stream: OpenStream, title: string) => void,
): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      `${apiUrl}/api/notifications/stream`,
      { agent: false, headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } },
      (response) => {
        if (response.statusCode !== 200) {
          response.resume()
          reject(new Error(`stream answered ${response.statusCode}`))
          return
        }
        let opened = false
        readEventStream(response, (event) => {
          if (event.event === 'notification' && typeof event.data?.data?.title === 'string')
            onTitle(stream, event.data.data.title)
          if (!opened) {
            opened = true
            resolve(stream)
          }
        })
      },
    )
    const stream: OpenStream = { userId, request, seen: new Map() }
    request.on('error', (error) => reject(error))
    request.setTimeout(30_000, () => request.destroy(new Error('stream did not open within 30 s')))
  })
}

/** S13: `users` users with two streams each; `rounds` sends to all of them; time until every stream has the event. */
export async function measureRealtime(ctx: Context & { users: number; rounds: number }): Promise<Row> {
  const request = `${ctx.users * 2} SSE streams (${ctx.users} users × 2), one notification to all ${ctx.users}: 202 → every stream has it (${ctx.rounds} rounds; p99 column: max)`
  const streams: OpenStream[] = []
  try {
    const users = await seedUserTokens(ctx.db, ctx.tenant, ctx.users)
    if (users.length < ctx.users) throw new Error(`only ${users.length} users to open streams for`)
    let pending: { title: string; left: number; done: () => void } | undefined
    const onTitle = (stream: OpenStream, title: string) => {
      if (stream.seen.has(title)) return
      stream.seen.set(title, performance.now())
      if (pending && title === pending.title && --pending.left === 0) pending.done()
    }
    const t0 = performance.now()
    const pairs = users.flatMap((u) => [u, u])
    for (let i = 0; i < pairs.length; i += 50) {
      streams.push(
        ...(await Promise.all(pairs.slice(i, i + 50).map((u) => openStream(ctx.apiUrl, u.userId, u.token, onTitle)))),
      )
    }
    console.log(`S13        ${streams.length} streams open in ${Math.round(performance.now() - t0)} ms`)
    await waitForIdleQueue(ctx.db)

    const completion: number[] = []
    const perStreamP50: number[] = []
    for (let round = 1; round <= ctx.rounds; round++) {
      const title = `Bench realtime ${round} ${randomBytes(4).toString('hex')}`
      const all = new Promise<void>((resolve) => (pending = { title, left: streams.length, done: resolve }))
      const response = await send(ctx, {
        title,
        body: '<p>Benchmark realtime</p>',
        url: '/bench/realtime',
        user_ids: users.map((u) => u.userId),
      })
      const accepted = performance.now()
      if (response.status !== 202) throw new Error(`POST answered ${response.status}: ${await response.text()}`)
      let timer: NodeJS.Timeout | undefined
      const timedOut = await Promise.race([
        all.then(() => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), 30_000))),
      ])
      clearTimeout(timer)
      if (timedOut)
        throw new Error(`round ${round}: ${pending!.left} of ${streams.length} streams had no event after 30 s`)
      const arrivals = streams.map((s) => s.seen.get(title)! - accepted)
      completion.push(Math.max(...arrivals))
      perStreamP50.push(percentile(arrivals, 50))
      await waitForIdleQueue(ctx.db)
      await sleep(200)
    }
    const max = Math.max(...completion)
    const row = {
      id: 'S13',
      request,
      p50: round1(percentile(completion, 50)),
      p99: round1(max),
      ms: round1(max),
      max_ms: round1(max),
      rounds_ms: completion.map(round1),
      stream_p50_ms: perStreamP50.map(round1),
      target: 'max < 1000 ms',
      pass: max < 1000,
    }
    console.log(
      `S13        every stream has the event after p50 ${row.p50} ms, max ${row.max_ms} ms over ${ctx.rounds} rounds (${row.rounds_ms.join(', ')}); per-stream p50 ${row.stream_p50_ms.join(', ')} ms`,
    )
    return row
  } catch (error) {
    console.log(`S13        FAILED: ${errorMessage(error)}`)
    return { id: 'S13', request, target: 'max < 1000 ms', pass: false, error: errorMessage(error) }
  } finally {
    for (const stream of streams) stream.request.destroy()
  }
}
