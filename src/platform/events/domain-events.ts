import { type InsertQueryBuilder, type InsertResult, type QueryCreator, type RawBuilder, sql } from 'kysely'
import type { Database, Db } from '../db/schema.js'

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
  /**
   * A write that rides in the events' own insert (optional), as a data-modifying CTE: given the
   * events of a recording (before they are stored, so without ids), the insert to run with them, or
   * undefined to take the `probe`/`handle` path for this recording. When it returns an insert,
   * `handle` is not called for the recording.
   */
  alongside?: (db: Db, events: DomainEvent[]) => RidingInsert | undefined
  /** Called once per recording with its events (in order) for which the probe held. */
  handle: (db: Db, events: RecordedEvent[]) => Promise<void>
}

/** An insert that can ride in another statement's WITH (no RETURNING needed). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type RidingInsert = InsertQueryBuilder<Database, any, InsertResult>
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
 * Writes events of one tenant in one statement (with the subscribers' probes and the writes that
 * ride along, e.g. their audit records), then lets each other subscriber handle them in one call: a
 * change with several events (a shared item and its grants) costs one insert, not one per event and
 * subscriber.
 */
export async function recordDomainEvents(db: Db, events: DomainEvent[]): Promise<string[]> {
  if (events.length === 0) return []
  const tenantId = events[0]!.tenantId
  if (events.some((event) => event.tenantId !== tenantId)) throw new Error('recordDomainEvents: the events of one call belong to one tenant')
  const riders = subscribers.map((subscriber) => subscriber.alongside?.(db, events))
  const handlers = subscribers.flatMap((subscriber, i) => (riders[i] ? [] : [subscriber]))
  const type = sql.ref('domain_events.type')
  const probes = handlers.map((subscriber, i) => sql<boolean>`${subscriber.probe ? subscriber.probe(tenantId, type) : sql`true`}`.as(`probe${i}`))
  // data-modifying CTEs run once and to completion whether or not the statement reads them
  let creator = db as QueryCreator<Database>
  for (const [i, rider] of riders.entries()) if (rider) creator = creator.with(`along${i}`, () => rider) as unknown as QueryCreator<Database>
  const rows = await creator.insertInto('domain_events')
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
  for (const [i, subscriber] of handlers.entries()) {
    const wanted = recorded.filter((_, row) => rows[row]![`probe${i}`])
    if (wanted.length > 0) await subscriber.handle(db, wanted)
  }
  return recorded.map((event) => event.id)
}
