import type { FastifyRequest } from 'fastify'
import { sql } from 'kysely'
import type { Db } from '../db/schema.js'
import { insertedRows } from '../db/database.js'
import type { Actor } from './actor.js'
import { groupBy } from '../group-by.js'
import { createWriteBehind, type WriteBehind } from '../write-behind.js'

/** A token's `last_used_at` is written at most this often (per token and process; the SQL enforces it across processes). */
export const SESSION_TOUCH_INTERVAL_MS = 60_000
/** Uses noted in a process are written in one statement per tenant after at most this long. */
const FLUSH_DELAY_MS = 10_000
const MAX_TRACKED = 100_000

interface PendingUse {
  tokenId: number
  tenantId: number
  userId: number
  at: Date
  userAgent: string | null
  ip: string | null
}

/** token id → when this process last noted its use. */
const noted = new Map<number, number>()
/** Per database: the uses noted and not yet written (one per token, its last). */
const pendingByDb = new WeakMap<Db, WriteBehind<PendingUse>>()

/** Who the request came from, as a session row keeps it. */
export function clientOf(request: Pick<FastifyRequest, 'headers' | 'ip'>): {
  userAgent: string | null
  ip: string | null
} {
  const agent = request.headers['user-agent']
  return { userAgent: typeof agent === 'string' ? agent.slice(0, 500) : null, ip: request.ip ?? null }
}

/**
 * Notes that the request's token was used: a map lookup per request. Once a minute per token the use
 * is queued, and the queue is written by a timer (one statement per tenant), never by the request.
 */
export function noteTokenUse(db: Db, actor: Actor, request: FastifyRequest): void {
  const now = Date.now()
  const last = noted.get(actor.tokenId)
  if (last !== undefined && now - last < SESSION_TOUCH_INTERVAL_MS) return
  if (noted.size >= MAX_TRACKED) prune(now)
  noted.set(actor.tokenId, now)
  let pending = pendingByDb.get(db)
  if (!pending) {
    pending = createWriteBehind({
      delayMs: FLUSH_DELAY_MS,
      write: (uses: PendingUse[]) => writeUses(db, uses),
      onError: (error) => request.server.log.warn({ err: error }, 'recording session use failed'),
    })
    pendingByDb.set(db, pending)
  }
  const use = { tokenId: actor.tokenId, tenantId: actor.tenantId, userId: actor.userId, at: new Date(now) }
  pending.add({ ...use, ...clientOf(request) }, actor.tokenId)
}

/** Writes the queued uses now (shutdown and tests; a timer otherwise). */
export async function flushSessionActivity(db: Db): Promise<void> {
  await pendingByDb.get(db)?.flush()
}

/**
 * Per tenant one upsert, which changes a row only when its last use is more than a minute older
 * (several processes write a token's use at most about once a minute). The age is compared as
 * `timestamptz - timestamptz > interval` (immutable operators): Citus refuses a non-immutable function
 * in the WHERE of ON CONFLICT (`timestamptz - interval` is only stable).
 */
async function writeUses(db: Db, uses: PendingUse[]): Promise<void> {
  for (const [tenantId, list] of groupBy(uses, (use) => use.tenantId)) {
    await sql`insert into session_activity (tenant_id, token_id, user_id, last_used_at, user_agent, ip)
      ${insertedRows({
        alias: 'u',
        leading: [sql`${tenantId}::bigint`],
        columns: [
          { name: 'token_id', type: 'bigint', values: list.map((u) => u.tokenId) },
          { name: 'user_id', type: 'bigint', values: list.map((u) => u.userId) },
          { name: 'at', type: 'timestamptz', values: list.map((u) => u.at.toISOString()) },
          { name: 'user_agent', type: 'text', values: list.map((u) => u.userAgent) },
          { name: 'ip', type: 'text', values: list.map((u) => u.ip) },
        ],
      })}
      on conflict (tenant_id, token_id) do update set last_used_at = excluded.last_used_at
      where session_activity.last_used_at is null
         or excluded.last_used_at - session_activity.last_used_at > interval '1 minute'`.execute(db)
  }
}

function prune(now: number): void {
  for (const [tokenId, at] of noted) if (now - at >= SESSION_TOUCH_INTERVAL_MS) noted.delete(tokenId)
  if (noted.size >= MAX_TRACKED) noted.clear()
}

/** Forgets which uses this process noted (tests: the next request of every token is noted again). */
export function forgetNotedTokenUses(): void {
  noted.clear()
}
