import type { DomainEventSubscriber } from '../../platform/events/domain-events.js'
import { type AccessScope, recordSyncWrites, type SyncChange } from '../../platform/sync/change-log.js'
import type { SyncSource } from '../../platform/sync/sync-source.js'
import { syncSources } from './sync-sources.js'
import { isWatchedType } from './sync.queries.js'

/** User events that may change what the user sees (role, activity, restore): the user's view is recomputed. */
const USER_EVENTS = ['user.updated', 'user.deleted', 'user.restored', 'user.blackedOut']
const KINDS = ['created', 'updated', 'deleted']

/** Every event type the feed listens to (the subscriber's probe: other events cost it nothing). */
function watchedTypes(): string[] {
  const types = new Set(USER_EVENTS)
  for (const source of syncSources().values()) {
    for (const kind of KINDS) if (kind !== 'created' || !source.createsRecorded) types.add(`${source.entity}.${kind}`)
    for (const type of source.events ?? []) types.add(type)
    for (const container of source.containers ?? []) {
      types.add(`${container}.updated`)
      types.add(`${container}.deleted`)
    }
  }
  return [...types]
}

/**
 * Domain events → the change feed, in the recording transaction (issue 43): a change of a synced
 * record is a change record; a user's change, a container's change, a folder's move is an access
 * change for the users it may concern. (Grants are recorded where they are written,
 * `recordGrantEvents`: a probe sees only event types, and grants on other targets must keep their
 * one-statement writes.)
 */
export const syncEventSubscriber: DomainEventSubscriber = {
  probe: (_tenantId, type) => isWatchedType(type, watchedTypes()),
  async handle(db, events) {
    const sources = syncSources()
    const inheriting = [...sources.values()].filter((source) => source.containers?.length)
    const changes: SyncChange[] = []
    const access: AccessScope[] = []
    for (const event of events) {
      const source = sources.get(event.subjectType)
      const [, kind] = event.type.split('.')
      const ownKind = source && event.type === `${source.entity}.${kind}` && KINDS.includes(kind ?? '')
      if (source && (ownKind || source.events?.includes(event.type))) {
        changes.push({ entity: source.entity, id: event.subjectId, deleted: event.type === `${source.entity}.deleted` })
        if (source.accessEvents?.(event)) access.push({ scope: 'tenant' })
      }
      const containerChanged = (inherits: SyncSource) =>
        inherits.containers!.includes(event.subjectType) &&
        (inherits.containerEvents ? inherits.containerEvents(event) : kind === 'updated' || kind === 'deleted')
      if (inheriting.some(containerChanged)) access.push({ scope: 'tenant' })
      if (USER_EVENTS.includes(event.type)) access.push({ scope: 'user', id: Number(event.subjectId) })
    }
    await recordSyncWrites(db, events[0]!.tenantId, { changes, access: dedupeScopes(access) })
  },
}

function dedupeScopes(scopes: AccessScope[]): AccessScope[] {
  if (scopes.some((s) => s.scope === 'tenant')) return [{ scope: 'tenant' }]
  return [...new Map(scopes.map((s) => [JSON.stringify(s), s])).values()]
}
