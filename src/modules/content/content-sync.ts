import { can } from '../../platform/auth/permissions.js'
import { existingIdsIn, pageQuery, pageRows } from '../../platform/sync/read-pages.js'
import type { SyncSource } from '../../platform/sync/sync-source.js'
import type { ContentResource } from './content-declaration.js'
import { selectVisibleContentIds } from './content-resource.queries.js'

/**
 * A content resource as a sync source (issue 43): visibility is the resource's one rule
 * (`visibleToActor`), data its list presenter (`list`, the same as its GET).
 */
export function contentSyncSource(
  content: ContentResource,
  options: Pick<SyncSource, 'events' | 'containers' | 'containerEvents' | 'schemaVersion'> = {},
): SyncSource {
  const viewPermission = `${content.module}.view`
  return {
    entity: content.alias,
    idType: 'integer',
    ...options,
    async visibleIds(db, actor, ids) {
      if (!can(actor, viewPermission) || ids?.length === 0) return []
      const visible = await selectVisibleContentIds(db, content.table, actor.tenantId, ids, (c) =>
        content.visibleToActor(actor, c),
      )
      return visible.map((id) => String(id))
    },
    existingIds: (db, tenantId, ids) => existingIdsIn(db, content.table, tenantId, ids),
    async read(db, actor, page) {
      if (!can(actor, viewPermission) || ('ids' in page && page.ids.length === 0)) return []
      return pageRows(await content.list(db, actor, pageQuery(page)))
    },
  }
}
