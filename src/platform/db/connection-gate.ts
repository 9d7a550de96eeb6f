import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * One tenant's database connections on this node (docs/limits.md, decision 0023): at most `max` of its
 * requests hold pool connections at once; further checkouts wait, first come first served, behind their
 * own tenant's, never in front of another tenant's.
 */
export class ConnectionPermits {
  /** Permits taken (each by a request holding a connection, or reserved for a request's whole life). */
  inUse = 0
  private readonly waiting: Array<() => void> = []

  constructor(public max: number) {}

  /** Takes a permit: at once while one is free (synchronous), else when a holder gives one back. */
  acquire(): void | Promise<void> {
    if (this.inUse < this.max && this.waiting.length === 0) {
      this.inUse++
      return
    }
    return new Promise((resolve) => this.waiting.push(resolve))
  }

  /** Takes a permit only when one is free at once (no one waiting); `false` otherwise. */
  tryAcquire(): boolean {
    if (this.inUse >= this.max || this.waiting.length > 0) return false
    this.inUse++
    return true
  }

  /** Gives a permit back: to the first waiter (it keeps counting as taken), else to the free ones. */
  release(): void {
    // above a lowered bound, the permit is not handed on
    const next = this.inUse > this.max ? undefined : this.waiting.shift()
    if (next) next()
    else this.inUse--
  }

  /**
   * A new bound (an operator changed the tenant's): raised, waiters take the permits now free at once;
   * lowered, the permits taken above it are not handed on when given back.
   */
  resize(max: number): void {
    this.max = max
    for (let next = this.waiting.shift(); next; next = this.waiting.shift()) {
      if (this.inUse >= this.max) {
        this.waiting.unshift(next)
        return
      }
      this.inUse++
      next()
    }
  }

  get idle(): boolean {
    return this.inUse === 0 && this.waiting.length === 0
  }
}

/** What a pool checkout asks of the request it runs for. */
export interface ConnectionScope {
  /** Before the checkout: waits for the request's permit unless it already holds one. */
  checkout(): void | Promise<void>
  /** After the connection went back to the pool (or the checkout failed). */
  checkin(): void
}

/**
 * A request's scope: one permit while it holds any connection. A second connection the request takes
 * while holding one (statements run side by side, a query beside its transaction) shares the permit: made
 * to wait, it would wait for the request itself.
 */
function requestScope(permits: ConnectionPermits): ConnectionScope {
  let held = 0
  let granted: void | Promise<void>
  return {
    checkout() {
      if (held++ === 0) granted = permits.acquire()
      return granted
    },
    checkin() {
      if (--held === 0) permits.release()
    },
  }
}

const scopes = new AsyncLocalStorage<ConnectionScope>()
let scopedRequests = 0

/**
 * Runs `next` (the rest of a request's handling) with its pool checkouts gated by `permits`. On Node 20
 * an AsyncLocalStorage in use costs a hook on every promise of the process (request-context.ts), so the
 * storage is on only while such a request is in flight: the caller scopes only the requests that can be
 * made to wait (their tenant holds every permit), and `done` ends the scope.
 */
export function runWithConnectionPermits(permits: ConnectionPermits, next: () => void): { done: () => void } {
  scopedRequests++
  let ended = false
  scopes.run(requestScope(permits), next)
  return {
    done() {
      if (ended) return
      ended = true
      if (--scopedRequests === 0) scopes.disable()
    },
  }
}

/** The connection scope of the request the current code runs for, if it is gated (pool checkouts). */
export function currentConnectionScope(): ConnectionScope | undefined {
  return scopedRequests === 0 ? undefined : scopes.getStore()
}

/**
 * Runs `work` outside any request's connection scope: work done for several requests at once (a batch
 * of notices) must not wait behind the permits of the one whose code happened to start it.
 */
export const outsideConnectionScopes = <T>(work: () => T): T => scopes.exit(work)
