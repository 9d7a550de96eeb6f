import { auditColumns, type AuditColumns, type AuditEntry } from './audit-log.js'
import { anonymizeAuditFor, auditInsert, recordAudits } from './audit-log.queries.js'
import { currentRequestContext } from '../../platform/audit/request-context.js'
import type { DomainEvent, DomainEventSubscriber } from '../../platform/events/domain-events.js'
import { eventTypeIn } from './audit.queries.js'

/**
 * Events that are audited whoever caused them (a job, the CLI, a sign-in without an actor yet), by
 * their audit action name: each is the record of one change. Which of them automations may deliver is
 * `AUTOMATION_EVENTS` (modules/automations): sign-in, second-factor and automation events are audited only.
 */
const RECORDED_ACTIONS: Record<string, string> = {
  'role.created': 'role.create',
  'role.updated': 'role.update',
  'role.deleted': 'role.delete',
  'department.created': 'department.create',
  'department.updated': 'department.update',
  'department.membersReplaced': 'department.members_replace',
  'department.deleted': 'department.delete',
  'user.provisioned': 'user.provision',
  'user.identityLinked': 'oidc.link',
  'oidcProvider.created': 'oidc.create',
  'oidcProvider.updated': 'oidc.update',
  'oidcProvider.deleted': 'oidc.delete',
  'scimToken.created': 'scim_token.create',
  'scimToken.revoked': 'scim_token.revoke',
  'retention.updated': 'retention.update',
  'retention.swept': 'retention.sweep',
  'notifications.cleared': 'notification.reset',
  // audited, never delivered to automations: the automations' own changes and the security events
  'automation.created': 'automation.create',
  'automation.updated': 'automation.update',
  'automation.deleted': 'automation.delete',
  'auth.signedIn': 'auth.login',
  'auth.signInFailed': 'auth.login_failed',
  'auth.signedOut': 'auth.logout',
  'auth.passwordReset': 'auth.password_reset',
  'auth.passwordResetRequested': 'auth.password_reset_requested',
  'session.revoked': 'session.revoke',
  'totp.enrolled': 'totp.enroll',
  'totp.enabled': 'totp.enable',
  'totp.disabled': 'totp.disable',
  'totp.reset': 'totp.reset',
}

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
  ...RECORDED_ACTIONS,
}

const TARGET_TYPES: Record<string, string> = {
  entityPermission: 'entity_permission',
  sharedItem: 'shared_item',
  scimToken: 'scim_token',
  oidcProvider: 'oidc_provider',
}

/** Whether an event is an administrative change: the nightly derivation of `active` is not. */
// an erasure is always recorded, also the retention sweep's daily one (the proof a data-protection officer asks for)
const isAdministrative = (event: DomainEvent) =>
  event.actorId !== null ||
  currentRequestContext().requestId !== null ||
  event.type === 'user.blackedOut' ||
  Object.hasOwn(RECORDED_ACTIONS, event.type)

/** The record's target: the event's subject; a failed sign-in naming no known user is about the tenant, and targets no one. */
const targetOf = (event: DomainEvent) =>
  event.type === 'auth.signInFailed' && event.subjectType === 'tenant'
    ? { targetType: 'user', targetId: null }
    : { targetType: TARGET_TYPES[event.subjectType] ?? event.subjectType, targetId: event.subjectId }

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
    const target = { tenantId: event.tenantId, ...targetOf(event) }
    // before → after as the recording service read it in its transaction; else what the event says
    const changes = event.audit ?? (changed ? { changed: changed.filter((f) => f !== 'password') } : data)
    entries.push({ ...target, action, changes })
    // a password change is its own record (the password itself never)
    if (changed?.includes('password')) entries.push({ ...target, action: 'user.password_change', changes: {} })
  }
  return entries
}

/**
 * The one audit path: every audited change is a domain event, audited from it inside the same
 * transaction (the records ride in the events' insert). No module calls `recordAudit` itself
 * (test/architecture.test.ts).
 */
export const auditDomainEvent: DomainEventSubscriber = {
  probe: (_tenantId, type) => eventTypeIn(type, Object.keys(ACTIONS)),
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
