import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { SYNC_CHANNEL } from '../../platform/db/change-notices.js'
import type { PubSub } from '../../platform/realtime/pg-pubsub.js'
import { secretBoxFor } from '../../platform/secrets/secret-box.js'
import { createSyncFeed, type SyncAnswer } from '../../platform/sync/sync-feed.js'
import type { SyncQuery } from './sync.schemas.js'

export type SyncService = ReturnType<typeof createSyncService>

const DEFAULT_LIMIT = 1000
const DEFAULT_DEVICE = 'default'

/** `GET /api/sync`: one sync, or a long poll (`wait`) that answers as soon as the tenant's view may have changed. */
export function createSyncService(deps: AppDeps, pubsub: PubSub) {
  const feed = createSyncFeed({
    db: deps.db,
    box: secretBoxFor(deps.config.secrets),
    retentionDays: deps.config.syncRetentionDays,
    deps,
  })
  // one subscription per process; each waiting poll registers a wake-up for its tenant
  const waiters = new Map<number, Set<() => void>>()
  let listening: Promise<unknown> | undefined
  const wakeAll = (tenant: number | null) => {
    const woken = tenant === null ? [...waiters.values()].flatMap((s) => [...s]) : [...(waiters.get(tenant) ?? [])]
    for (const wake of woken) wake()
  }
  const listen = () =>
    (listening ??= pubsub.subscribe(SYNC_CHANNEL, (payload) => {
      const tenant = typeof payload === 'object' && payload !== null && 'tenant' in payload ? payload.tenant : null
      wakeAll(typeof tenant === 'number' ? tenant : null)
    }))

  /** Resolves on a change notice of the tenant, after `ms`, or when `signal` aborts. */
  function changeOrTimeout(
    tenantId: number,
    ms: number,
    signal: AbortSignal,
  ): { done: Promise<void>; cancel: () => void } {
    let cancel = () => {}
    const done = new Promise<void>((resolve) => {
      const set = waiters.get(tenantId) ?? new Set()
      waiters.set(tenantId, set)
      const timer = setTimeout(finish, ms)
      signal.addEventListener('abort', finish, { once: true })
      function finish() {
        clearTimeout(timer)
        set.delete(finish)
        if (set.size === 0 && waiters.get(tenantId) === set) waiters.delete(tenantId)
        signal.removeEventListener('abort', finish)
        resolve()
      }
      set.add(finish)
      cancel = finish
    })
    return { done, cancel }
  }

  async function sync(actor: Actor, query: SyncQuery, signal: AbortSignal): Promise<SyncAnswer> {
    const device = query.device ?? DEFAULT_DEVICE
    const limit = query.limit ?? DEFAULT_LIMIT
    const wait = query.cursor === undefined ? 0 : (query.wait ?? 0)
    if (wait === 0) return feed.sync(actor, device, query.cursor, limit)
    await listen()
    const deadline = Date.now() + wait * 1000
    // registered before the check: a change committed in between wakes it
    let waiting = changeOrTimeout(actor.tenantId, wait * 1000, signal)
    try {
      while (Date.now() < deadline && !signal.aborted && (await feed.isIdle(actor, device, query.cursor!))) {
        await waiting.done
        waiting = changeOrTimeout(actor.tenantId, Math.max(0, deadline - Date.now()), signal)
      }
    } finally {
      waiting.cancel()
    }
    return feed.sync(actor, device, query.cursor, limit)
  }

  return { sync }
}
