import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../db/schema.js'

/**
 * In one process: at most `limit` deliveries per host at once, handed over in arrival order. A delivery
 * waits briefly for a slot (a healthy host frees one within milliseconds); when none frees up in time
 * the host is slow or dead, and the caller defers the delivery instead of holding a worker slot.
 */
class LocalHostSlots {
  private readonly running = new Map<string, number>()
  private readonly waiting = new Map<string, Array<() => void>>()

  constructor(private readonly limit: number) {}

  acquire(host: string, waitMs: number): Promise<boolean> {
    const running = this.running.get(host) ?? 0
    if (running < this.limit) {
      this.running.set(host, running + 1)
      return Promise.resolve(true)
    }
    return new Promise((resolve) => {
      const queue = this.waiting.get(host) ?? []
      this.waiting.set(host, queue)
      const handOver = () => {
        clearTimeout(timer)
        resolve(true)
      }
      const timer = setTimeout(() => {
        const at = queue.indexOf(handOver)
        if (at >= 0) queue.splice(at, 1)
        if (queue.length === 0) this.waiting.delete(host)
        resolve(false)
      }, waitMs)
      queue.push(handOver)
    })
  }

  /** Frees a slot: handed straight to the next waiting delivery of that host, if any. */
  release(host: string): void {
    const queue = this.waiting.get(host)
    const next = queue?.shift()
    if (queue?.length === 0) this.waiting.delete(host)
    if (next) return next()
    const left = (this.running.get(host) ?? 1) - 1
    if (left > 0) this.running.set(host, left)
    else this.running.delete(host)
  }
}

/** How often a delivery looks for a host slot freed by another process while it waits. */
const FLEET_POLL_MS = 25

export interface HostSlotsOptions {
  /** Deliveries to one host at once, across every worker process of the fleet. */
  limit: number
  /** How long a lease lasts at most (longer than one delivery's timeout): a crashed holder's slot frees itself. */
  leaseMs: number
}

export interface HostSlot { release(): Promise<void> }

/**
 * The per-host bound of outbound deliveries for the whole fleet (stateless nodes): a delivery holds a
 * slot of this process (no database work while the process alone saturates the host) and a lease of
 * one of the host's `limit` rows in `outbound_host_leases` (so N worker processes still send at most
 * `limit` requests to a host at once). Both are waited for up to `waitMs`; undefined means "defer".
 */
export function createHostSlots(db: Db, options: HostSlotsOptions) {
  const local = new LocalHostSlots(options.limit)
  const holder = randomUUID()

  async function lease(host: string): Promise<number | undefined> {
    const { rows } = await sql<{ slot: number }>`
      insert into outbound_host_leases as l (host, slot, holder, leased_until)
      select ${host}, s, ${holder}, now() + make_interval(secs => ${options.leaseMs / 1000}::float8)
        from generate_series(0, ${options.limit - 1}::int) s
       where not exists (select 1 from outbound_host_leases f where f.host = ${host} and f.slot = s and f.leased_until > now())
       order by random() limit 1
      on conflict (host, slot) do update set holder = excluded.holder, leased_until = excluded.leased_until
       where l.leased_until <= now()
      returning slot`.execute(db)
    return rows[0]?.slot
  }

  async function acquire(host: string, waitMs: number): Promise<HostSlot | undefined> {
    const deadline = Date.now() + waitMs
    if (!(await local.acquire(host, waitMs))) return undefined
    for (;;) {
      const slot = await lease(host).catch(() => undefined)
      if (slot !== undefined) {
        return {
          async release() {
            // the lease first: a delivery of this process waiting for the local slot then finds it free
            await sql`update outbound_host_leases set leased_until = now() - interval '1 second'
                       where host = ${host} and slot = ${slot} and holder = ${holder}`.execute(db).catch(() => undefined)
            local.release(host)
          },
        }
      }
      if (Date.now() + FLEET_POLL_MS > deadline) {
        local.release(host)
        return undefined
      }
      await new Promise((resolve) => setTimeout(resolve, FLEET_POLL_MS))
    }
  }

  return { acquire }
}

export type HostSlots = ReturnType<typeof createHostSlots>
