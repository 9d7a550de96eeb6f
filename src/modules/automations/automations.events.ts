import type { Db } from '../../platform/db/schema.js'
import type { DomainEventSubscriber, RecordedEvent } from '../../platform/events/domain-events.js'
import * as queries from './automations.queries.js'
import { enqueueDeliveryAttempt } from './webhook-delivery.job.js'

const CONTENT_ALIASES = [
  'calendarEvent',
  'filemanagerDirectory',
  'filemanagerFile',
  'form',
  'formMessage',
  'infoboardPost',
  'infoboardComment',
  'manualChapter',
  'manualEntry',
  'taskExecution',
]

/**
 * Domain event types an automation may listen to (contract 00 §9 and contract 30), or `*` (all of
 * these). Other events never reach an automation: the security events of signing in (`auth.*`,
 * `session.revoked`, `totp.*`) and the changes of automations themselves (`automation.*`: a `*`
 * automation would be told of its own creation) are for the audit log only.
 */
export const AUTOMATION_EVENTS: readonly string[] = [
  'user.created',
  'user.updated',
  'user.deleted',
  'user.restored',
  'user.blackedOut',
  'user.loggedOut',
  'sharedItem.created',
  'sharedItem.updated',
  'sharedItem.deleted',
  'folder.created',
  'folder.updated',
  'folder.deleted',
  'entityPermission.created',
  'entityPermission.deleted',
  'notification.sent',
  // administrative changes that were audited only until issue 40 (the audit log subscribes to them too)
  'role.created',
  'role.updated',
  'role.deleted',
  'department.created',
  'department.updated',
  'department.membersReplaced',
  'department.deleted',
  'user.provisioned',
  'user.identityLinked',
  'oidcProvider.created',
  'oidcProvider.updated',
  'oidcProvider.deleted',
  'scimToken.created',
  'scimToken.revoked',
  'retention.updated',
  'retention.swept',
  'notifications.cleared',
  ...CONTENT_ALIASES.flatMap((alias) => [`${alias}.created`, `${alias}.updated`, `${alias}.deleted`]),
  // publishing (issue 41): when a post or entry reaches its readers, at once or at its scheduled time
  'infoboard.post.published',
  'manuals.entry.published',
]

export const TEST_EVENT_TYPE = 'automation.test'

export interface OutgoingEvent {
  id: string
  type: string
  data: Record<string, unknown>
}

/**
 * Inserts one delivery per action of each automation and enqueues its first attempt, all through
 * `db` — the transaction of the change, so deliveries commit or vanish with it (transactional outbox).
 */
export async function createDeliveries(
  db: Db,
  tenantId: number,
  automations: Array<{ id: number; actions: queries.StoredAction[] }>,
  event: OutgoingEvent,
): Promise<number[]> {
  const wanted = automations
    .flatMap((a) => a.actions.map((action, actionIndex) => ({ action, actionIndex, automationId: a.id })))
    .filter(({ action }) => action.type === 'webhook')
    .map(({ action, actionIndex, automationId }) => ({
      automationId,
      actionIndex,
      url: String(action.config.url),
      method: String(action.config.method ?? 'POST'),
    }))
  if (wanted.length === 0) return []
  const rows = await queries.insertDeliveries(db, tenantId, event, wanted)
  for (const row of rows)
    await enqueueDeliveryAttempt(db, { tenantId, deliveryId: row.id, series: row.series, attempt: 1 })
  return rows.map((r) => r.id)
}

/**
 * Domain-event subscriber, inside the recording transaction. Its probe asks, in the event's own
 * insert, whether an active automation listens: most events of most tenants have none, and then cost
 * no lookup of their own.
 */
export const enqueueDeliveriesForEvents: DomainEventSubscriber = {
  probe: (tenantId, type) => queries.activeAutomationListens(tenantId, type, AUTOMATION_EVENTS),
  async handle(db, events) {
    for (const event of events) await enqueueDeliveriesForEvent(db, event)
  },
}

async function enqueueDeliveriesForEvent(db: Db, event: RecordedEvent): Promise<void> {
  const automations = await queries.selectMatchingAutomations(db, event.tenantId, event.type)
  if (automations.length === 0) return
  const data = {
    subject_type: event.subjectType,
    subject_id: event.subjectId,
    actor_id: event.actorId,
    ...(event.data ?? {}),
  }
  await createDeliveries(db, event.tenantId, automations, { id: event.id, type: event.type, data })
}
