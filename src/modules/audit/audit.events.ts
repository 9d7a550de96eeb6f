import { sql } from 'kysely'
import {
  anonymizeAuditFor,
  auditColumns,
  auditInsert,
  recordAudits,
  type AuditColumns,
  type AuditEntry,
} from '../../platform/audit/audit-log.js'
import { currentRequestContext } from '../../platform/audit/request-context.js'
import type { DomainEvent, DomainEventSubscriber } from '../../platform/events/domain-events.js'

/** Domain events that are administrative changes, by their audit action name. */
const ACTIONS: Record<string, string> = {
  'user.created': 'user.create',
  'user.updated': 'user.update',
  'user.deleted': 'user.delete',
  'user.restored': 'user.restore',
  'user.blackedOut': 'user.blackout',
  'user.loggedOut': 'user.logout',
  'entityPermission.created': 'entity_permission.create',
  'entityPermission.deleted': 'entity_permission.delete',
  'folder.created': 'folder.create',
  'folder.updated': 'folder.update',
  'folder.deleted': 'folder.delete',
  'sharedItem.created': 'shared_item.create',
  'sharedItem.updated': 'shared_item.update',
  'sharedItem.deleted': 'shared_item.delete',
}

const TARGET_TYPES: Record<string, string> = { entityPermission: 'entity_permission', sharedItem: 'shared_item' }

/** Whether an event is an administrative change: the nightly derivation of `active` is not. */
// an erasure is always recorded, also the retention sweep's daily one (the proof a data-protection officer asks for)
const isAdministrative = (event: DomainEvent) =>
  event.actorId !== null || currentRequestContext().requestId !== null || event.type === 'user.blackedOut'

/** The audit records of audited events: one each, and a password change its own. */
function auditEntries(events: DomainEvent[]): AuditEntry[] {
  const entries: AuditEntry[] = []
  for (const event of events) {
    let action = ACTIONS[event.type]!
    const data = event.data ?? {}
    if (event.type === 'sharedItem.updated' && data.restored) action = 'shared_item.restore'
    const changed = Array.isArray(data.changed)
      ? data.changed.filter((name): name is string => typeof name === 'string')
      : undefined
    const target = {
      tenantId: event.tenantId,
      targetType: TARGET_TYPES[event.subjectType] ?? event.subjectType,
      targetId: event.subjectId,
    }
    // before → after as the recording service read it in its transaction; else what the event says
    const changes = event.audit ?? (changed ? { changed: changed.filter((f) => f !== 'password') } : data)
    entries.push({ ...target, action, changes })
    // a password change is its own record (the password itself never)
    if (changed?.includes('password')) entries.push({ ...target, action: 'user.password_change', changes: {} })
  }
  return entries
}

/**
 * The changes these modules already describe as domain events are audited from them, inside the same
 * transaction: the records ride in the events' insert; modules without such events call
 * `recordAudit` next to the change.
 */
export const auditDomainEvent: DomainEventSubscriber = {
  probe: (_tenantId, type) => sql<boolean>`${type} = any(${Object.keys(ACTIONS)}::text[])`,
  alongside: {
    values(events) {
      const audited = events.filter((event) => Object.hasOwn(ACTIONS, event.type) && isAdministrative(event))
      // a black-out first anonymizes the earlier records (handle), so its records cannot ride along
      if (audited.length === 0 || audited.some((event) => event.type === 'user.blackedOut')) return undefined
      return auditColumns(auditEntries(audited))
    },
    // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- the values are what `values` above returned
    insert: (tenantId, values, onlyIf) => auditInsert(tenantId, values as AuditColumns, onlyIf),
  },
  async handle(db, events) {
    const audited = events.filter(isAdministrative)
    for (const event of audited)
      if (event.type === 'user.blackedOut') await anonymizeAuditFor(db, event.tenantId, Number(event.subjectId))
    await recordAudits(db, auditEntries(audited))
  },
}
