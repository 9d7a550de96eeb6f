import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../db/schema.js'

/** How often a delivery looks for a host slot freed by another process while it waits. */
const FLEET_POLL_MS = 25

export interface HostSlotsOptions {
  /** Deliveries to one host at once, across every worker process of the fleet. */
  limit: number
  /** How long a lease lasts at most (longer than one delivery's timeout): a crashed holder's slot frees itself. */
  leaseMs: number
}

export interface HostSlot {
  release(): Promise<void>
}

/** A lease is passed on to this process's next waiting delivery for at most this long, then given back (fairness between processes). */
const HOLD_MS = 1_000

interface HostState {
  /** Slots of the host this process holds in `outbound_host_leases`, and since when. */
  held: Map<number, number>
  waiters: Array<(slot: number | undefined) => void>
  polling: boolean
}

/**
 * The per-host bound of outbound deliveries for the whole fleet (stateless nodes): a delivery runs on
 * one of the host's `limit` slots, leased in `outbound_host_leases`, so N worker processes still send at
 * most `limit` requests to a host at once. Leases are amortized: a finished delivery hands its slot to the
 * next delivery of this process that waits for the host (for up to HOLD_MS), so a burst costs a few
 * statements per second, not two per delivery. A waiting delivery also looks for slots other processes
 * free (every FLEET_POLL_MS); after `waitMs` it is told to defer (undefined).
 */
export function createHostSlots(db: Db, options: HostSlotsOptions) {
  const holder = randomUUID()
  const hosts = new Map<string, HostState>()
  const state = (host: string) => {
    let found = hosts.get(host)
    if (!found) hosts.set(host, (found = { held: new Map(), waiters: [], polling: false }))
    return found
  }

  async function lease(host: string): Promise<number | undefined> {
    const { rows } = await sql<{ slot: number }>`
      insert into outbound_host_leases as l (host, slot, holder, leased_until)
      select ${host}, s, ${holder}, now() + make_interval(secs => ${options.leaseMs / 1000}::float8)
        from generate_series(0, ${options.limit - 1}::int) s
       where not exists (select 1 from outbound_host_leases f where f.host = ${host} and f.slot = s and f.leased_until > now())
       order by random() limit 1
      on conflict (host, slot) do update set holder = excluded.holder, leased_until = excluded.leased_until
       where l.leased_until <= now()
      returning slot`
      .execute(db)
      .catch(() => ({ rows: [] as Array<{ slot: number }> }))
    return rows[0]?.slot
  }

  async function giveBack(host: string, slot: number): Promise<void> {
    state(host).held.delete(slot)
    await sql`update outbound_host_leases set leased_until = now() - interval '1 second'
               where host = ${host} and slot = ${slot} and holder = ${holder}`
      .execute(db)
      .catch(() => undefined)
  }

  const handle = (host: string, slot: number): HostSlot => ({ release: () => release(host, slot) })

  async function release(host: string, slot: number): Promise<void> {
    const s = state(host)
    const next = s.waiters.shift()
    if (next && Date.now() - (s.held.get(slot) ?? 0) < HOLD_MS) return next(slot)
    if (next) s.waiters.unshift(next)
    await giveBack(host, slot)
    if (s.waiters.length > 0) poll(host)
  }

  /** While deliveries wait and this process holds fewer than `limit` slots: look for one freed elsewhere. */
  function poll(host: string): void {
    const s = state(host)
    if (s.polling) return
    s.polling = true
    void (async () => {
      while (s.waiters.length > 0 && s.held.size < options.limit) {
        const slot = await lease(host)
        if (slot === undefined) {
          await new Promise((resolve) => setTimeout(resolve, FLEET_POLL_MS))
          continue
        }
        s.held.set(slot, Date.now())
        const next = s.waiters.shift()
        if (next) next(slot)
        else await giveBack(host, slot)
      }
      s.polling = false
    })()
  }

  async function acquire(host: string, waitMs: number): Promise<HostSlot | undefined> {
    const s = state(host)
    if (s.waiters.length === 0 && s.held.size < options.limit) {
      const slot = await lease(host)
      if (slot !== undefined) {
        s.held.set(slot, Date.now())
        return handle(host, slot)
      }
    }
    const slot = await new Promise<number | undefined>((resolve) => {
      const waiter = (given: number | undefined) => {
        clearTimeout(timer)
        resolve(given)
      }
      const timer = setTimeout(() => {
        const at = s.waiters.indexOf(waiter)
        if (at >= 0) s.waiters.splice(at, 1)
        resolve(undefined)
      }, waitMs)
      s.waiters.push(waiter)
      poll(host)
    })
    return slot === undefined ? undefined : handle(host, slot)
  }

  return { acquire }
}
export type HostSlots = ReturnType<typeof createHostSlots>
