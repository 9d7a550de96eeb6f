import { sql } from 'kysely'
import { anonymizeAuditFor, recordAudits, type AuditEntry } from '../../platform/audit/audit-log.js'
import { currentRequestContext } from '../../platform/audit/request-context.js'
import type { DomainEventSubscriber } from '../../platform/events/domain-events.js'

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

/**
 * The changes these modules already describe as domain events are audited from them, inside the same
 * transaction (one insert for all the events of a recording); modules without such events call
 * `recordAudit` next to the change.
 */
export const auditDomainEvent: DomainEventSubscriber = {
  probe: (_tenantId, type) => sql<boolean>`${type} = any(${Object.keys(ACTIONS)}::text[])`,
  async handle(db, events) {
    // the nightly derivation of `active` is not an administrative change
    const audited = events.filter((event) => event.actorId !== null || currentRequestContext().requestId !== null)
    const entries: AuditEntry[] = []
    for (const event of audited) {
      let action = ACTIONS[event.type]!
      const data = event.data ?? {}
      if (event.type === 'sharedItem.updated' && data.restored) action = 'shared_item.restore'
      if (event.type === 'user.blackedOut') await anonymizeAuditFor(db, event.tenantId, Number(event.subjectId))
      const changed = Array.isArray(data.changed) ? data.changed as string[] : undefined
      const target = { tenantId: event.tenantId, targetType: TARGET_TYPES[event.subjectType] ?? event.subjectType, targetId: event.subjectId }
      // before → after as the recording service read it in its transaction; else what the event says
      const changes = event.audit ?? (changed ? { changed: changed.filter((f) => f !== 'password') } : data)
      entries.push({ ...target, action, changes })
      // a password change is its own record (the password itself never)
      if (changed?.includes('password')) entries.push({ ...target, action: 'user.password_change', changes: {} })
    }
    await recordAudits(db, entries)
  },
}
