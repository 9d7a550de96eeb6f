import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { currentRequest } from '../audit/request-context.js'
import { ACTOR_CHANGED_CHANNEL, ACTOR_TABLES } from '../db/change-notices.js'
import { onCommittedWrites } from '../db/database.js'
import type { Db } from '../db/schema.js'
import { createPgPubSub, type PubSub } from '../realtime/pg-pubsub.js'
import type { Actor } from './actor.js'

export interface CachedActor {
  actor: Actor
  /** When the token expires (ms since epoch). */
  expiresAt: number
}

export interface ActorCacheOptions {
  pubsub: PubSub
  maxEntries?: number
  /** An upper bound on an entry's life, whatever happens to invalidation. */
  maxAgeMs?: number
  onError?: (error: unknown) => void
}

interface Entry extends CachedActor {
  tenantId: number
  cachedAt: number
}

/** How long a request that changed an actor waits, at most, for its invalidation to be heard back. */
const ECHO_WAIT_MS = 500
/**
 * After the echo: PostgreSQL signals every listening backend at the commit, but each sends the
 * notification to its own node when it is scheduled; on a loaded host another node's backend may lag
 * the echo's (the cluster suite's logout scenario saw it once with no grace, and once more with 25 ms
 * while other suites loaded the host). A grace covers that lag; it is paid only by requests that
 * changed an actor (a logout, a role change), which are rare.
 */
const ECHO_GRACE_MS = 100

/**
 * Token hash → actor, so an authenticated request costs no database round trip for its actor.
 * Never stale (security catalogue: "no stale cache"):
 * - a change committed by this process clears the cache synchronously, before the response that
 *   made it is sent (`onCommittedWrites`);
 * - a change committed by another process arrives by NOTIFY (sent in the changing transaction by the
 *   driver: db/change-notices.ts) and clears that tenant;
 * - while the LISTEN connection is down the cache is off (a missed NOTIFY could not be noticed), and
 *   it starts empty when listening again;
 * - a lookup that was running while the cache was cleared is not stored (generation check);
 * - token expiry is checked on every hit; unknown tokens are never cached (no memory for garbage).
 */
export class ActorCache {
  private readonly entries = new Map<string, Entry>()
  private generation = 0
  private listening = false
  private readonly maxEntries: number
  private readonly maxAgeMs: number
  private readonly stopWatchingWrites: () => void
  /** Requests that committed a change to an actor (their answer waits for `announce`). */
  private readonly changedBy = new WeakSet<object>()
  private readonly echoes = new Map<string, () => void>()

  constructor(private readonly options: ActorCacheOptions) {
    this.maxEntries = options.maxEntries ?? 50_000
    this.maxAgeMs = options.maxAgeMs ?? 60_000
    this.stopWatchingWrites = onCommittedWrites((tables) => {
      if (![...ACTOR_TABLES].some((table) => tables.has(table))) return
      this.clear()
      const request = currentRequest()
      if (request) this.changedBy.add(request)
    })
  }

  /** Opens the LISTEN connection; until it is up, every lookup goes to the database. */
  async start(): Promise<void> {
    await this.options.pubsub.subscribe(ACTOR_CHANGED_CHANNEL, (payload) => {
      const { tenant, echo } = (payload && typeof payload === 'object' ? payload : {}) as {
        tenant?: number | null
        echo?: string
      }
      this.clearTenant(tenant)
      if (echo) this.echoes.get(echo)?.()
    })
  }

  /** Whether this request committed a change to what an actor is made of. */
  changedActors(request: object): boolean {
    return this.changedBy.has(request)
  }

  /**
   * Other nodes learn of a committed actor change by NOTIFY (sent with the changing commit), which they
   * hear a moment after the commit. Before answering the request that made the change, this node sends
   * a NOTIFY of its own and waits until its own listener hears it: notifications reach every listener in
   * commit order, so by then every other node has been sent the invalidation — and a client that goes on
   * to the next node with the same token is refused there (the cluster suite's logout scenario).
   */
  async announce(db: Db, tenantId: number | undefined): Promise<void> {
    if (!this.listening) return
    const echo = randomUUID()
    const heard = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ECHO_WAIT_MS)
      this.echoes.set(echo, () => {
        clearTimeout(timer)
        resolve()
      })
    })
    try {
      await sql`select pg_notify(${ACTOR_CHANGED_CHANNEL}, ${JSON.stringify({ tenant: tenantId ?? null, echo })})`.execute(
        db,
      )
      await heard
      await new Promise((resolve) => setTimeout(resolve, ECHO_GRACE_MS))
    } finally {
      this.echoes.delete(echo)
    }
  }

  /** The pubsub reports its connection state: a gap in listening may have hidden a change. */
  setListening(listening: boolean): void {
    this.clear()
    this.listening = listening
  }

  async resolve(key: string, load: () => Promise<CachedActor | undefined>): Promise<Actor | undefined> {
    const now = Date.now()
    const hit = this.entries.get(key)
    if (hit && hit.expiresAt > now && now - hit.cachedAt < this.maxAgeMs) {
      // an invalidation that reached this process in the same batch of I/O as this request is handled
      // first: wait for the end of the poll phase, then trust the entry only if it is still there
      await new Promise((resolve) => setImmediate(resolve))
      if (this.entries.get(key) === hit) return hit.actor
    } else if (hit) this.entries.delete(key)
    const generation = this.generation
    const loaded = await load()
    if (loaded && this.listening && generation === this.generation) this.store(key, loaded, now)
    return loaded?.actor
  }

  clear(): void {
    this.generation++
    this.entries.clear()
  }

  /** Clears one tenant's actors, or every actor when the notice names no tenant. */
  private clearTenant(tenantId: number | null | undefined): void {
    this.generation++
    if (typeof tenantId !== 'number' || !Number.isInteger(tenantId)) return this.entries.clear()
    for (const [key, entry] of this.entries) if (entry.tenantId === tenantId) this.entries.delete(key)
  }

  private store(key: string, loaded: CachedActor, now: number): void {
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next()
      if (!oldest.done) this.entries.delete(oldest.value)
    }
    this.entries.set(key, { ...loaded, tenantId: loaded.actor.tenantId, cachedAt: now })
  }

  async close(): Promise<void> {
    this.listening = false
    this.clear()
    this.stopWatchingWrites()
    // the pubsub is the cache's own: closing it ends the LISTEN (an UNLISTEN first would wait on a socket
    // that no longer keeps the process alive)
    await this.options.pubsub.close()
  }
}

/** An actor cache with its own LISTEN connection on `url`; off until that connection listens. */
export async function startActorCache(url: string, onError: (error: unknown) => void): Promise<ActorCache> {
  // the listener reports to the cache, which is made after it: until then there is none to tell
  const listeners: { cache?: ActorCache } = {}
  // the cache's listener never keeps a process alive on its own (a server has its HTTP socket)
  const pubsub = createPgPubSub({
    connectionString: async () => url,
    onError,
    keepProcessAlive: false,
    onListening: (listening) => listeners.cache?.setListening(listening),
  })
  const cache = new ActorCache({ pubsub, onError })
  listeners.cache = cache
  await cache.start()
  return cache
}
