import { type RawBuilder, sql } from 'kysely'
import { insertedRows, withClause, type CommonTableExpression } from '../db/database.js'
import type { Db } from '../db/schema.js'
import { onCitus } from '../db/citus.js'
import { composedTable } from '../composition.js'

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
   * A write that rides in the events' own insert (optional), as a data-modifying CTE, in two steps so
   * that a statement can be compiled once per shape (`shapedStatement`): `values` gives, for the events
   * of a recording (before they are stored, so without ids), what to insert as plain values (arrays,
   * strings, numbers; never decided on by `insert`), or undefined to take the `probe`/`handle` path
   * for this recording; `insert` is the insert of those values (maybe stand-ins), writing only when
   * `onlyIf` holds. When it rides, `handle` is not called for the recording.
   */
  alongside?: {
    values: (events: DomainEvent[]) => RiderValues | undefined
    insert: (tenantId: number, values: RiderValues, onlyIf?: RawBuilder<boolean>) => RidingInsert
  }
  /** Called once per recording with its events (in order) for which the probe held. */
  handle: (db: Db, events: RecordedEvent[]) => Promise<void>
}

/** An insert that can ride in another statement's WITH (no RETURNING needed). */
export type RidingInsert = RawBuilder<unknown>
/** What a riding insert writes, as values (see `alongside`). */
export type RiderValues = object
/** The composed modules' `eventSubscribers`, in module order (each once). */
const subscribers = composedTable((modules) => [...new Set(modules.flatMap((module) => module.eventSubscribers ?? []))])

/**
 * Writes a domain event through `db` — pass the transaction of the change it describes; an event that is
 * itself the whole change (a failed sign-in) may pass the pool: it is then written in one statement or
 * a transaction of its own, with its subscribers' writes.
 */
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
  if (events.some((event) => event.tenantId !== tenantId))
    throw new Error('recordDomainEvents: the events of one call belong to one tenant')
  const riders = riderValues(events)
  // outside a transaction (a failed sign-in, a job's record): never half-written, see `recordUnheeded`
  if (!db.isTransaction)
    return (
      (await recordUnheeded(db, tenantId, events, riders)) ??
      db.transaction().execute((trx) => recordDomainEvents(trx, events))
    )
  const along = ridingInserts(tenantId, riders)
  const handlers = handlersBesides(riders)
  if (onCitus()) return recordRoutedWhole(db, events, along, handlers)
  const type = sql.ref('domain_events.type')
  const probes = handlers.map(
    (subscriber, i) =>
      sql`, ${subscriber.probe ? subscriber.probe(tenantId, type) : sql`true`} as ${sql.id(`probe${i}`)}`,
  )
  const probeList = probes.length > 0 ? sql.join(probes, sql``) : sql``
  const insert = eventsInsert(tenantId, eventColumns(events))
  const { rows } = await sql<{ id: string } & Record<string, boolean>>`${withClause(along)}
    ${insert}
    returning id${probeList}`.execute(db)
  const recorded = events.map((event, i) => ({ ...event, id: rows[i]!.id }))
  for (const [i, subscriber] of handlers.entries()) {
    const wanted = recorded.filter((_, row) => rows[row]![`probe${i}`])
    if (wanted.length > 0) await subscriber.handle(db, wanted)
  }
  return recorded.map((event) => event.id)
}

/**
 * Events recorded without a transaction: the events and their riders (the audit records) in one
 * statement that writes only when no other subscriber has work for them (their probes), so that both
 * commit together in one round trip. Undefined, with nothing written, when a subscriber has work (or
 * has no probe, or on a Citus coordinator): the caller then records them in a transaction of their own,
 * where those subscribers run too.
 */
async function recordUnheeded(
  db: Db,
  tenantId: number,
  events: DomainEvent[],
  riders: Record<string, RiderValues>,
): Promise<string[] | undefined> {
  const handlers = handlersBesides(riders)
  if (onCitus() || handlers.some((handler) => !handler.probe)) return undefined
  const columns = eventColumns(events)
  const heeded = handlers.map((handler) => handler.probe!(tenantId, sql.ref('e.type')))
  const unheeded =
    heeded.length === 0
      ? undefined
      : sql<boolean>`not exists (select from unnest(${columns.type}::text[]) as e(type) where ${sql.join(heeded, sql` or `)})`
  const { rows } = await sql<{ id: string }>`${withClause(ridingInserts(tenantId, riders, unheeded))}
    ${eventsInsert(tenantId, columns, unheeded)}
    returning id`.execute(db)
  return rows.length === events.length ? rows.map((row) => row.id) : undefined
}

/**
 * `recordDomainEvents` on a Citus coordinator: the riders, the events and the probes as statements of
 * their own in the caller's transaction, each routed whole to the tenant's worker. Citus plans every
 * data-modifying CTE as a subplan evaluated from the coordinator (an intermediate result per CTE), and
 * refuses a subquery in an insert's RETURNING; two or three router statements cost less there.
 */
async function recordRoutedWhole(
  db: Db,
  events: DomainEvent[],
  along: CommonTableExpression[],
  handlers: DomainEventSubscriber[],
): Promise<string[]> {
  const tenantId = events[0]!.tenantId
  for (const [, rider] of along) await rider.execute(db)
  const columns = eventColumns(events)
  const { rows } = await sql<{ id: string }>`${eventsInsert(tenantId, columns)} returning id`.execute(db)
  const recorded = events.map((event, i) => ({ ...event, id: rows[i]!.id }))
  const probed = handlers.filter((handler) => handler.probe)
  const { rows: probes } =
    probed.length === 0
      ? { rows: [] }
      : await sql<Record<string, boolean>>`select ${sql.join(
          probed.map((h, i) => sql`${h.probe!(tenantId, sql.ref('recorded_events.type'))} as ${sql.id(`probe${i}`)}`),
        )}
        from (values ${sql.join(columns.type.map((type, n) => sql`(${type}::text, ${n}::int)`))}) as recorded_events(type, n)
        order by recorded_events.n`.execute(db)
  for (const handler of handlers) {
    const i = probed.indexOf(handler)
    const wanted = i < 0 ? recorded : recorded.filter((_, row) => probes[row]![`probe${i}`])
    if (wanted.length > 0) await handler.handle(db, wanted)
  }
  return recorded.map((event) => event.id)
}

/** Events as their insert takes them: one array per column (one statement text whatever their number). */
export interface EventColumns {
  type: string[]
  actorId: Array<number | null>
  subjectType: string[]
  subjectId: string[]
  data: string[]
}

const eventColumns = (events: DomainEvent[]): EventColumns => ({
  type: events.map((e) => e.type),
  actorId: events.map((e) => e.actorId),
  subjectType: events.map((e) => e.subjectType),
  subjectId: events.map((e) => String(e.subjectId)),
  data: events.map((e) => JSON.stringify(e.data ?? {})),
})

/** The insert of events of one tenant, only when `onlyIf` holds. */
function eventsInsert(tenantId: number, columns: EventColumns, onlyIf?: RawBuilder<boolean>) {
  return sql`insert into domain_events (tenant_id, type, actor_id, subject_type, subject_id, data)
    ${insertedRows({
      alias: 'e',
      leading: [sql`${tenantId}::bigint`],
      columns: [
        { name: 'type', type: 'text', values: columns.type },
        { name: 'actor_id', type: 'bigint', values: columns.actorId },
        { name: 'subject_type', type: 'text', values: columns.subjectType },
        { name: 'subject_id', type: 'text', values: columns.subjectId },
        { name: 'data', type: 'jsonb', values: columns.data },
      ],
      ordered: true,
      onlyIf,
    })}`
}

/** The values of events written by a caller's single statement: the events' columns and, by CTE name, the riders' values. */
export interface EventWrites {
  events: EventColumns
  riders: Record<string, RiderValues>
}

/**
 * Events of one tenant written by a caller's single statement, for a change made without a
 * transaction of its own, as values (`eventWritesSql` makes their SQL). Undefined when a subscriber
 * without a probe would have to run, and on a Citus coordinator (which evaluates every data-modifying
 * CTE from the coordinator, docs/citus.md): the caller then takes the transactional way (`recordDomainEvents`).
 */
export function domainEventWrites(events: DomainEvent[]): EventWrites | undefined {
  if (onCitus()) return undefined
  const tenantId = events[0]!.tenantId
  if (events.some((event) => event.tenantId !== tenantId))
    throw new Error('domainEventWrites: the events of one statement belong to one tenant')
  const riders = riderValues(events)
  if (handlersBesides(riders).some((handler) => !handler.probe)) return undefined
  return { events: eventColumns(events), riders }
}

/**
 * The SQL of `domainEventWrites` (its values may be stand-ins): the events' insert and the riders'
 * inserts as common table expressions, each writing only when `onlyIf` holds. `unheeded` holds when
 * no other subscriber has work for these events (their probes): the caller writes only then, and
 * else takes the transactional way, where those subscribers run.
 */
export function eventWritesSql(tenantId: number, writes: EventWrites, onlyIf: RawBuilder<boolean>) {
  const heeded = handlersBesides(writes.riders).map((handler) => handler.probe!(tenantId, sql.ref('e.type')))
  const unheeded =
    heeded.length === 0
      ? sql<boolean>`true`
      : sql<boolean>`not exists (select from unnest(${writes.events.type}::text[]) as e(type) where ${sql.join(heeded, sql` or `)})`
  const ctes: CommonTableExpression[] = [
    ...ridingInserts(tenantId, writes.riders, onlyIf),
    ['recorded_events', eventsInsert(tenantId, writes.events, onlyIf)],
  ]
  return { ctes, unheeded }
}

const riderName = (index: number) => `along${index}`

/** The riders' values for these events, by CTE name (subscribers that do not ride are absent). */
function riderValues(events: DomainEvent[]): Record<string, RiderValues> {
  const riders: Record<string, RiderValues> = {}
  for (const [i, subscriber] of subscribers().entries()) {
    const values = subscriber.alongside?.values(events)
    if (values) riders[riderName(i)] = values
  }
  return riders
}

/** The riders' inserts (as named CTEs). */
function ridingInserts(
  tenantId: number,
  riders: Record<string, RiderValues>,
  onlyIf?: RawBuilder<boolean>,
): CommonTableExpression[] {
  return subscribers().flatMap((subscriber, i): CommonTableExpression[] => {
    const values = riders[riderName(i)]
    return values ? [[riderName(i), subscriber.alongside!.insert(tenantId, values, onlyIf)]] : []
  })
}

/** The subscribers that handle the events themselves (those that do not ride). */
const handlersBesides = (riders: Record<string, RiderValues>) =>
  subscribers().filter((_, i) => !Object.hasOwn(riders, riderName(i)))
