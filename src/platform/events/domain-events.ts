import { type RawBuilder, sql } from 'kysely'
import { withClause, type CommonTableExpression } from '../db/common-table-expressions.js'
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
  /**
   * A write that rides in the events' own insert (optional), as a data-modifying CTE: given the
   * events of a recording (before they are stored, so without ids), the insert to run with them, or
   * undefined to take the `probe`/`handle` path for this recording. When it returns an insert,
   * `handle` is not called for the recording. With `onlyIf`, the insert writes only when it holds.
   */
  alongside?: (events: DomainEvent[], onlyIf?: RawBuilder<boolean>) => RidingInsert | undefined
  /** Called once per recording with its events (in order) for which the probe held. */
  handle: (db: Db, events: RecordedEvent[]) => Promise<void>
}

/** An insert that can ride in another statement's WITH (no RETURNING needed). */
export type RidingInsert = RawBuilder<unknown>
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
  const { along, handlers } = ridersOf(events)
  const type = sql.ref('domain_events.type')
  const probes = handlers.map((subscriber, i) => sql`, ${subscriber.probe ? subscriber.probe(tenantId, type) : sql`true`} as ${sql.id(`probe${i}`)}`)
  const { rows } = await sql<{ id: string } & Record<string, boolean>>`${withClause(along)}
    ${eventsInsert(tenantId, events)}
    returning id${probes.length > 0 ? sql.join(probes, sql``) : sql``}`.execute(db)
  const recorded = events.map((event, i) => ({ ...event, id: rows[i]!.id }))
  for (const [i, subscriber] of handlers.entries()) {
    const wanted = recorded.filter((_, row) => rows[row]![`probe${i}`])
    if (wanted.length > 0) await subscriber.handle(db, wanted)
  }
  return recorded.map((event) => event.id)
}

/** The insert of events of one tenant (from arrays: one statement text whatever their number), only when `onlyIf` holds. */
function eventsInsert(tenantId: number, events: DomainEvent[], onlyIf?: RawBuilder<boolean>) {
  return sql`insert into domain_events (tenant_id, type, actor_id, subject_type, subject_id, data)
    select ${tenantId}::bigint, e.type, e.actor_id, e.subject_type, e.subject_id, e.data
    from unnest(${events.map((e) => e.type)}::text[], ${events.map((e) => e.actorId)}::bigint[], ${events.map((e) => e.subjectType)}::text[],
      ${events.map((e) => String(e.subjectId))}::text[], ${events.map((e) => JSON.stringify(e.data ?? {}))}::jsonb[])
      with ordinality as e(type, actor_id, subject_type, subject_id, data, n)
    ${onlyIf ? sql`where ${onlyIf}` : sql``}
    order by e.n`
}

/**
 * Events of one tenant written by a caller's single statement, for a change made without a
 * transaction of its own: their insert and the riders' inserts as common table expressions, each
 * writing only when `onlyIf` holds. `unheeded` holds when no other subscriber has work for these
 * events (their probes): the caller writes only then, and else takes the transactional way
 * (`recordDomainEvents`), where those subscribers run. Undefined when a subscriber without a probe
 * would have to run.
 */
export function domainEventWrites(events: DomainEvent[], onlyIf: RawBuilder<boolean>) {
  const tenantId = events[0]!.tenantId
  if (events.some((event) => event.tenantId !== tenantId)) throw new Error('domainEventWrites: the events of one statement belong to one tenant')
  const { along, handlers } = ridersOf(events, onlyIf)
  if (handlers.some((handler) => !handler.probe)) return undefined
  const heeded = handlers.map((handler) => handler.probe!(tenantId, sql.ref('e.type')))
  const unheeded = heeded.length === 0 ? sql<boolean>`true`
    : sql<boolean>`not exists (select from unnest(${events.map((e) => e.type)}::text[]) as e(type) where ${sql.join(heeded, sql` or `)})`
  const ctes: CommonTableExpression[] = [...along, ['recorded_events', eventsInsert(tenantId, events, onlyIf)]]
  return { ctes, unheeded }
}

/** The riders' inserts for these events (as named CTEs) and the subscribers that handle them instead. */
function ridersOf(events: DomainEvent[], onlyIf?: RawBuilder<boolean>) {
  const riders = subscribers.map((subscriber) => subscriber.alongside?.(events, onlyIf))
  const along = riders.flatMap((rider, i): CommonTableExpression[] => (rider ? [[`along${i}`, rider]] : []))
  return { along, handlers: subscribers.filter((_, i) => !riders[i]) }
}
