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

/** Subscribers run inside the recording transaction (e.g. automations enqueue deliveries there). */
export type DomainEventSubscriber = (db: Db, event: DomainEvent & { id: string }) => Promise<void>
const subscribers: DomainEventSubscriber[] = []

export function subscribeToDomainEvents(subscriber: DomainEventSubscriber): void {
  if (!subscribers.includes(subscriber)) subscribers.push(subscriber)
}

/** Writes a domain event through `db` — pass the transaction of the change it describes. */
export async function recordDomainEvent(db: Db, event: DomainEvent): Promise<string> {
  const row = await db
    .insertInto('domain_events')
    .values({
      tenant_id: event.tenantId,
      type: event.type,
      actor_id: event.actorId,
      subject_type: event.subjectType,
      subject_id: String(event.subjectId),
      data: JSON.stringify(event.data ?? {}),
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  for (const subscriber of subscribers) await subscriber(db, { ...event, id: row.id })
  return row.id
}
