import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../db/schema.js'

export interface DomainEvent {
  type: string
  tenantId: number
  actorId: number | null
  subjectType: string
  subjectId: number | string
  data?: Record<string, unknown>
  /**
   * The change as the audit log records it, `{ field: [before, after] }` (see `diff` in
   * platform/audit). Passed to subscribers only: never stored with the event nor published.
   */
  audit?: Record<string, unknown>
}

export type RecordedEvent = DomainEvent & { id: string }

/** Subscribers run inside the recording transaction (e.g. automations enqueue deliveries there). */
export interface DomainEventSubscriber {
  /**
   * Whether the subscriber has anything to do for an event, asked in the insert's own statement
   * (`type` is the new row's type column): an event for which it is false costs the subscriber no
   * round trip. Absent: every event.
   */
  probe?: (tenantId: number, type: RawBuilder<unknown>) => RawBuilder<boolean>
  /** Called once per recording with its events (in order) for which the probe held. */
  handle: (db: Db, events: RecordedEvent[]) => Promise<void>
}
const subscribers: DomainEventSubscriber[] = []

export function subscribeToDomainEvents(subscriber: DomainEventSubscriber): void {
  if (!subscribers.includes(subscriber)) subscribers.push(subscriber)
}

/** Writes a domain event through `db` — pass the transaction of the change it describes. */
export async function recordDomainEvent(db: Db, event: DomainEvent): Promise<string> {
  const [id] = await recordDomainEvents(db, [event])
  return id!
}

/**
 * Writes events of one tenant in one statement (with the subscribers' probes), then lets each
 * subscriber handle them in one call: a change with several events (a shared item and its grants)
 * costs one insert, not one per event and subscriber.
 */
export async function recordDomainEvents(db: Db, events: DomainEvent[]): Promise<string[]> {
  if (events.length === 0) return []
  const tenantId = events[0]!.tenantId
  if (events.some((event) => event.tenantId !== tenantId)) throw new Error('recordDomainEvents: the events of one call belong to one tenant')
  const type = sql.ref('domain_events.type')
  const probes = subscribers.map((subscriber, i) => sql<boolean>`${subscriber.probe ? subscriber.probe(tenantId, type) : sql`true`}`.as(`probe${i}`))
  const rows = await db.insertInto('domain_events')
    .values(events.map((event) => ({
      tenant_id: tenantId,
      type: event.type,
      actor_id: event.actorId,
      subject_type: event.subjectType,
      subject_id: String(event.subjectId),
      data: JSON.stringify(event.data ?? {}),
    })))
    .returning(['id', ...probes] as never)
    .execute() as Array<{ id: string } & Record<string, boolean>>
  const recorded = events.map((event, i) => ({ ...event, id: rows[i]!.id }))
  for (const [i, subscriber] of subscribers.entries()) {
    const wanted = recorded.filter((_, row) => rows[row]![`probe${i}`])
    if (wanted.length > 0) await subscriber.handle(db, wanted)
  }
  return recorded.map((event) => event.id)
}
