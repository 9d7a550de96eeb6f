import { sql } from 'kysely'
import type { Db } from '../db/schema.js'

/** A rate-limit budget: reads, writes, expensive operations (fan-out, imports, exports, tests, redeliveries). */
export type Bucket = 'read' | 'write' | 'expensive'
export const BUCKETS: readonly Bucket[] = ['read', 'write', 'expensive']

/** One budget a request draws on: a key within its tenant (`token:12:read`, `tenant:read`) and its limit. */
export interface Budget {
  /** The policy's name in the headers (`token-read`, `tenant-read`). */
  name: string
  key: string
  limit: number
}

/** Where one budget stands after a request (fleet-wide, as of this node's last lease). */
export interface BudgetState {
  name: string
  limit: number
  remaining: number
  /** Seconds until the window ends and the budget is whole again. */
  reset: number
}

export interface Decision {
  allowed: boolean
  /** Seconds until a refused request may succeed (the window's end). */
  retryAfter: number
  states: BudgetState[]
  /** The budget that refused the request. */
  refusedBy?: string
}

/** The part of a window's budget one node holds (leased from `rate_limit_counters`). */
interface LocalBudget {
  windowStart: number
  /** Requests this node may still admit without asking the database. */
  tokens: number
  /** The fleet's use of the window after this node's last lease (leased, not necessarily spent). */
  fleetUsed: number
  limit: number
  /** The database said the window's budget is spent: refused until the window ends. */
  exhausted: boolean
  /** A lease in flight (the requests that find the budget empty wait for it together). */
  pending: Promise<void> | undefined
}

export interface RateLimiterOptions {
  windowSeconds: number
  /** Most requests one lease takes (default 200). */
  maxChunk?: number
  /** Called when a lease fails (the request is admitted then: the limiter fails open). */
  onError?: (error: unknown) => void
  now?: () => number
}

/**
 * Fixed-window rate limits that hold for the sum of the nodes (decision 0023). The budget of a window
 * lives in one row per tenant and key of `rate_limit_counters`; a node leases a chunk of it in one
 * statement (`INSERT … ON CONFLICT DO UPDATE`) and admits that many requests from memory, so a burst costs
 * one round trip per chunk, not per request, and the next chunk is leased ahead while a quarter of
 * the current one is left (a request waits for a lease only when a budget is first used in a window,
 * or spent faster than a lease takes). The chunk (a sixteenth of the limit, at most 200) shrinks as the window's budget runs out (an eighth
 * of what is left, at least 1), so the requests leased but not spent when other nodes are refused stay a
 * few. A node that dies loses only its unspent chunk (the fleet admits fewer, never more).
 */
export function createRateLimiter(db: Db, options: RateLimiterOptions) {
  const windowMs = options.windowSeconds * 1000
  const maxChunk = options.maxChunk ?? 200
  const now = options.now ?? Date.now
  const budgets = new Map<string, LocalBudget>()

  const chunkOf = (limit: number) => Math.max(1, Math.min(maxChunk, Math.floor(limit / 16)))

  async function lease(tenantId: number, windowStart: number, wanted: Array<{ budget: Budget; local: LocalBudget }>) {
    const start = new Date(windowStart)
    const rows = sql.join(
      wanted.map(({ budget }) => {
        const chunk = Math.min(chunkOf(budget.limit), budget.limit)
        return sql`(${tenantId}::bigint, ${budget.key}, ${start}::timestamptz, ${chunk}::int, ${chunk}::int, ${budget.limit}::int)`
      }),
    )
    try {
      // an existing window: an eighth of what is left (at least 1, at most the chunk), while anything is left
      const { rows: leased } = await sql<{ key: string; used: number; granted: number }>`
        insert into rate_limit_counters as c (tenant_id, key, window_start, used, granted, quota)
        values ${rows}
        on conflict (tenant_id, key, window_start) do update
          set granted = least(excluded.granted, greatest(1, (excluded.quota - c.used) / 8)),
              used = c.used + least(excluded.granted, greatest(1, (excluded.quota - c.used) / 8)),
              quota = excluded.quota
          where c.used < excluded.quota
        returning key, used, granted`.execute(db)
      const byKey = new Map(leased.map((row) => [row.key, row]))
      for (const { budget, local } of wanted) {
        if (local.windowStart !== windowStart) continue
        const row = byKey.get(budget.key)
        if (!row) {
          local.exhausted = true
          local.fleetUsed = Math.max(local.fleetUsed, budget.limit)
          continue
        }
        local.tokens += row.granted
        local.fleetUsed = row.used
      }
    } catch (error) {
      options.onError?.(error)
      // fail open: the API keeps serving when the counters cannot be reached
      for (const { budget, local } of wanted) local.tokens += chunkOf(budget.limit)
    }
  }

  function localBudget(tenantId: number, budget: Budget, windowStart: number): LocalBudget {
    const id = `${tenantId}:${budget.key}`
    let local = budgets.get(id)
    if (!local || local.windowStart !== windowStart) {
      local = { windowStart, tokens: 0, fleetUsed: 0, limit: budget.limit, exhausted: false, pending: undefined }
      budgets.set(id, local)
    } else if (local.limit !== budget.limit) {
      // the operator raised (or lowered) the limit: ask the database again
      if (budget.limit > local.limit) local.exhausted = false
      local.limit = budget.limit
    }
    return local
  }

  function spend(windowStart: number, locals: LocalBudget[]) {
    const reset = Math.max(1, Math.ceil((windowStart + windowMs - now()) / 1000))
    const spent = locals.findIndex((l) => l.exhausted && l.tokens <= 0)
    const refused = spent === -1 ? locals.findIndex((l) => l.tokens <= 0) : spent
    const allowed = refused === -1
    if (allowed) for (const l of locals) l.tokens--
    return { allowed, refused, reset }
  }

  function report(
    locals: LocalBudget[],
    allBudgets: Budget[],
    { allowed, refused, reset }: { allowed: boolean; refused: number; reset: number },
  ): Decision {
    const states = locals.map((l, i) => ({
      name: allBudgets[i]!.name,
      limit: l.limit,
      remaining: Math.max(0, Math.min(l.limit, l.limit - l.fleetUsed + l.tokens)),
      reset,
    }))
    return { allowed, retryAfter: reset, states, ...(allowed ? {} : { refusedBy: allBudgets[refused]!.name }) }
  }

  /** Spends one request of each budget (or none) and, when a budget runs low, leases its next chunk ahead. */
  function decide(tenantId: number, windowStart: number, locals: LocalBudget[], request: Budget[]): Decision {
    const outcome = spend(windowStart, locals)
    if (outcome.allowed) {
      const low = request
        .map((budget, i) => ({ budget, local: locals[i]! }))
        .filter(({ budget, local }) => !local.pending && !local.exhausted && local.tokens <= chunkOf(budget.limit) / 4)
      if (low.length > 0) void startLease(tenantId, windowStart, low)
    }
    return report(locals, request, outcome)
  }

  function startLease(tenantId: number, windowStart: number, wanted: Array<{ budget: Budget; local: LocalBudget }>) {
    const pending = lease(tenantId, windowStart, wanted).finally(() => {
      for (const { local } of wanted) if (local.pending === pending) local.pending = undefined
    })
    for (const { local } of wanted) local.pending = pending
    return pending
  }

  /**
   * Takes one request from each budget, or from none (refused). Resolves without a database round trip
   * while this node holds leased requests of every budget.
   */
  function take(tenantId: number, request: Budget[]): Decision | Promise<Decision> {
    const windowStart = Math.floor(now() / windowMs) * windowMs
    const locals = request.map((b) => localBudget(tenantId, b, windowStart))
    if (locals.every((l) => l.tokens > 0) || locals.some((l) => l.exhausted && l.tokens <= 0))
      return decide(tenantId, windowStart, locals, request)
    return (async () => {
      for (let attempt = 0; attempt < 4; attempt++) {
        if (locals.some((l) => l.exhausted && l.tokens <= 0) || locals.every((l) => l.tokens > 0)) break
        const waiting = locals.flatMap((l) => (l.pending ? [l.pending] : []))
        if (waiting.length > 0) {
          await Promise.all(waiting)
          continue
        }
        const wanted = request
          .map((budget, i) => ({ budget, local: locals[i]! }))
          .filter(({ local }) => local.tokens <= 0 && !local.exhausted)
        await startLease(tenantId, windowStart, wanted)
      }
      return decide(tenantId, windowStart, locals, request)
    })()
  }

  /** Forgets windows that have ended (the map would otherwise hold every token ever seen). */
  function sweep(): void {
    const current = Math.floor(now() / windowMs) * windowMs
    for (const [id, local] of budgets) if (local.windowStart < current && !local.pending) budgets.delete(id)
  }

  return { take, sweep }
}

export type RateLimiter = ReturnType<typeof createRateLimiter>

/** How long the counters of an ended window are kept (nothing reads them after the window). */
export const COUNTER_RETENTION_MS = 60 * 60 * 1000
/** Rows one statement of the sweep deletes at most (a short transaction, few row locks, little WAL at once). */
const SWEEP_BATCH = 5_000

/**
 * Deletes the counters of windows that ended more than an hour ago (the hourly job
 * `limits:sweep_counters`). Tenant by tenant (`tenantIds`: every tenant, read by the caller), in batches: on Citus each statement is routed to one tenant's shard (docs/citus.md), where one
 * cross-tenant DELETE would be a task on every shard and a distributed commit. A tenant without old
 * windows costs one index probe.
 */
export async function sweepRateLimitCounters(
  db: Db,
  tenantIds: readonly number[],
  { now = Date.now(), batch = SWEEP_BATCH }: { now?: number; batch?: number } = {},
): Promise<number> {
  const before = new Date(now - COUNTER_RETENTION_MS)
  let deleted = 0
  for (const id of tenantIds) {
    for (;;) {
      const result = await sql`
        delete from rate_limit_counters
        where tenant_id = ${id} and (key, window_start) in (
          select key, window_start from rate_limit_counters
          where tenant_id = ${id} and window_start < ${before} limit ${batch})`.execute(db)
      const rows = Number(result.numAffectedRows ?? 0n)
      deleted += rows
      if (rows < batch) break
    }
  }
  return deleted
}
