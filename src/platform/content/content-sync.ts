import type { Db } from '../db/schema.js'
import { gatedList, scheduledRecheck, type SyncSource } from '../sync/sync-feed.js'
import type { ContentResource } from './content-resource.js'

/**
 * A content resource as an entity of the change feed (platform/sync): its list read (the module
 * permission, grants, folder and parent rules, drafts for readers) and presenter, under its alias.
 * `scheduled`: the table publishes on a schedule (issue 41), so the view may change without a write.
 */
export function contentSyncSource(content: ContentResource, db: Db, options: { scheduled?: boolean } = {}): SyncSource {
  return {
    entity: content.alias,
    table: content.table,
    idType: 'bigint',
    list: gatedList(`${content.module}.view`, (actor, query) => content.list(db, actor, query)),
    ...(options.scheduled ? { recheckAt: scheduledRecheck(content.table) } : {}),
  }
}
