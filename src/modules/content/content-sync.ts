import { sql } from 'kysely'
import { can } from '../../platform/auth/permissions.js'
import { existingIdsIn, pageQuery, pageRows } from '../../platform/sync/read-pages.js'
import type { SyncSource } from '../../platform/sync/sync-source.js'
import type { ContentResource } from './content-resource.js'

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
      const only = ids ? sql`and c.id = any(${ids.map(Number)}::bigint[])` : sql``
      const { rows } = await sql<{ id: number }>`select c.id from ${sql.table(content.table)} as c
        where c.tenant_id = ${actor.tenantId} ${only} and ${content.visibleToActor(actor, 'c')}`.execute(db)
      return rows.map((row) => String(row.id))
    },
    existingIds: (db, tenantId, ids) => existingIdsIn(db, content.table, tenantId, ids),
    async read(db, actor, page) {
      if (!can(actor, viewPermission) || ('ids' in page && page.ids.length === 0)) return []
      return pageRows(await content.list(db, actor, pageQuery(page)))
    },
  }
}
