import type { Config } from '../../config.js'
import type { Actor } from '../auth/actor.js'
import type { Db } from '../db/schema.js'
import type { RecordedEvent } from '../events/domain-events.js'

/** A record as an entity's own GET returns it to the actor. */
export type SyncRecord = Record<string, unknown>

/** The public URLs a presenter's computed fields are built from (a shared item's `url`). */
export type SyncUrls = Pick<Config, 'baseUrl' | 'appUrl'>

/** Which records one read of a source returns: named ones, or a page in id order after `after`. */
export type SyncReadPage = { ids: string[] } | { after: string | null; limit: number }

/**
 * An entity offered to offline clients (issue 43, docs/sync.md). A module lists its sources in its
 * `AppModule.syncSources`; the sync module reads them from the composed modules. Both functions apply
 * the entity's own visibility rule for the actor in SQL; `read` goes through the entity's own
 * presenter (its list), so the data is exactly what its GET returns.
 */
export interface SyncSource {
  /** The entity's name on the wire, its grant alias where it has one (`infoboardPost`). */
  entity: string
  /** How its ids look on the wire. */
  idType: 'integer' | 'uuid'
  /** The id of a record whose GET carries none (a user's own settings: the user's id); else its `id`. */
  idOf?: (record: SyncRecord, actor: Actor) => string | number
  /** Raise when the shape of the data changes: cursors from before answer 410 sync_reset. */
  schemaVersion?: number
  /** Event types whose subject is a record of this entity, besides `<entity>.created|updated|deleted`. */
  events?: string[]
  /**
   * Its creates record their change records themselves, in their own statement (a shared item's
   * one-statement create, decision 0005): `<entity>.created` is not watched, since a watched event
   * would take that create off its one statement.
   */
  createsRecorded?: boolean
  /**
   * How the records are presented to this actor, when that depends on the actor's permissions (a
   * user's extended fields): when it differs from what the client view was given, every visible
   * record of the entity is sent again.
   */
  presentation?: (actor: Actor) => string
  /**
   * Aliases of records whose visibility this entity inherits (a manual entry's chapter): their update
   * or delete may change who sees this entity's records, so it is an access change for the tenant.
   */
  containers?: string[]
  /**
   * Which events of its containers may change who sees this entity's records, when not every update or
   * delete does (a comment follows its post: the post moved, deleted, published or rescheduled).
   */
  containerEvents?: (event: RecordedEvent) => boolean
  /**
   * Events of this entity that may change who sees OTHER records (a folder moved or deleted changes
   * its subtree's visibility): each is an access change for the tenant.
   */
  accessEvents?: (event: RecordedEvent) => boolean
  /** The ids among `ids` (every one when omitted) the actor may see now: one statement. */
  visibleIds(db: Db, actor: Actor, ids?: string[]): Promise<string[]>
  /** Which of these ids still exist (whoever may see them): a record gone is `deleted`, else `access_lost`. */
  existingIds(db: Db, tenantId: number, ids: string[]): Promise<Set<string>>
  /** The records of a page as the entity's GET presents them to the actor (only visible ones come back). */
  read(db: Db, actor: Actor, page: SyncReadPage, urls: SyncUrls): Promise<SyncRecord[]>
}
