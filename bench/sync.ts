/**
 * Issue 43's figures beyond S18 (the idle sync): a first sync streamed (records, time, the API's RSS
 * growth: flat memory), and a sync after one change in the 100,000-user tenant (the employee marks one of
 * their notifications read, then syncs from the cursor before it; p50 target 20 ms).
 */
import { sql } from 'kysely'
import type { Db } from '../src/platform/db/schema.js'
import type { SeededTenant } from './seed.js'
import { syncSnapshot } from './scenarios.js'
import { errorMessage } from './wait.js'

type Row = Record<string, unknown>

export interface SyncContext {
  db: Db
  apiUrl: string
  tenant: SeededTenant
  rssMb: (pid: number) => Promise<number>
}

/** The first-sync target: 10,000 records in under 2 s (judged per 10,000 records). */
const FIRST_SYNC_MS_PER_10K = 2_000
const CHANGE_ROUNDS = 50
const CHANGE_P50_TARGET_MS = 20

/** The first sync of the employee and of the administrator (who sees the whole directory). */
export async function measureFirstSync(ctx: SyncContext, apiPid: number): Promise<Row[]> {
  const rows: Row[] = []
  for (const [who, token] of [
    ['employee', ctx.tenant.userToken],
    ['administrator', ctx.tenant.adminToken],
  ] as const) {
    const base = { id: `sync-first-${who}`, request: `GET /api/sync (no cursor) as the ${who}` }
    try {
      const before = await ctx.rssMb(apiPid)
      let peak = before
      const sampler = setInterval(() => void ctx.rssMb(apiPid).then((mb) => (peak = Math.max(peak, mb))), 50)
      const snapshot = await syncSnapshot(ctx.apiUrl, token, `bench-first-${who}`).finally(() => clearInterval(sampler))
      const growth = Number((peak - before).toFixed(1))
      const per10k = Math.round((snapshot.ms / Math.max(1, snapshot.records)) * 10_000)
      console.log(
        `sync-first     ${who}: ${snapshot.records} records (${JSON.stringify(snapshot.entities)}), ${(snapshot.bytes / 1e6).toFixed(1)} MB in ${snapshot.ms} ms (first byte ${snapshot.firstByteMs} ms), RSS growth ${growth} MB`,
      )
      rows.push({
        ...base,
        request: `${base.request}: ${snapshot.records} records in ${snapshot.ms} ms (${per10k} ms per 10,000; first byte ${snapshot.firstByteMs} ms)`,
        records: snapshot.records,
        entities: snapshot.entities,
        ms: snapshot.ms,
        first_byte_ms: snapshot.firstByteMs,
        ms_per_10k: per10k,
        rss_growth_mb: growth,
        target: `< ${FIRST_SYNC_MS_PER_10K} ms per 10,000 records, RSS < 100 MB`,
        pass: per10k < FIRST_SYNC_MS_PER_10K && growth < 100,
      })
    } catch (error) {
      rows.push({ ...base, pass: false, error: errorMessage(error) })
    }
  }
  return rows
}

/** One change (a notification of the employee's marked read), then the employee's sync from the cursor before it. */
export async function measureSyncAfterChange(ctx: SyncContext): Promise<Row> {
  const { tenant } = ctx
  const base = {
    id: 'sync-change',
    request: `GET /api/sync?cursor=… after one change, in a tenant of ${tenant.counts.users.toLocaleString('en-US')} users (${CHANGE_ROUNDS} rounds)`,
    target: `p50 ≤ ${CHANGE_P50_TARGET_MS} ms`,
  }
  try {
    const headers = { authorization: `Bearer ${tenant.userToken}` }
    const { rows: notifications } = await sql<{ id: string }>`select id from notifications
      where tenant_id = ${tenant.tenantId} and notifiable_type = 'user' and notifiable_id = ${tenant.userId}
      order by id limit ${CHANGE_ROUNDS}`.execute(ctx.db)
    if (notifications.length === 0) return { ...base, pass: false, error: 'the employee has no notifications' }
    let { cursor } = await syncSnapshot(ctx.apiUrl, tenant.userToken, 'bench-change')
    const latencies: number[] = []
    for (let round = 0; round < CHANGE_ROUNDS; round++) {
      const id = notifications[round % notifications.length]!.id
      const read_at = round % 2 === 0 ? new Date().toISOString() : null
      const marked = await fetch(`${ctx.apiUrl}/api/notifications/${id}`, {
        method: 'PUT',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ read_at }),
      })
      if (!marked.ok) return { ...base, pass: false, error: `the mark answered ${marked.status}` }
      const started = performance.now()
      const res = await fetch(`${ctx.apiUrl}/api/sync?device=bench-change&cursor=${encodeURIComponent(cursor)}`, {
        headers,
      })
      const answer = (await res.json()) as { changes: Array<{ id: string }>; cursor: string }
      latencies.push(performance.now() - started)
      if (res.status !== 200 || !answer.changes.some((change) => change.id === id))
        return { ...base, pass: false, error: `round ${round}: answered ${res.status} without the change` }
      cursor = answer.cursor
    }
    latencies.sort((a, b) => a - b)
    const p50 = Number(latencies[Math.floor(latencies.length / 2)]!.toFixed(1))
    const max = Number(latencies.at(-1)!.toFixed(1))
    console.log(`sync-change    p50 ${p50} ms, max ${max} ms over ${CHANGE_ROUNDS} changes`)
    return { ...base, p50, max, pass: p50 <= CHANGE_P50_TARGET_MS }
  } catch (error) {
    return { ...base, pass: false, error: errorMessage(error) }
  }
}
