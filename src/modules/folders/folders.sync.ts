import { existingIdsIn, pageQuery, pageRows } from '../../platform/sync/read-pages.js'
import type { SyncSource } from '../../platform/sync/sync-source.js'
import { createFoldersService } from './folders.service.js'
import { visibleFolderIds } from './folders-visibility.queries.js'

/**
 * Folders for offline clients (issue 43): the folders the user may see (`folderVisibleSql`, view
 * grants effective down the tree), presented by the folders list (named in the user's language).
 */
export const folderSyncSource: SyncSource = {
  entity: 'folder',
  idType: 'integer',
  // a folder moved or deleted changes the visibility of everything below it
  accessEvents: (event) =>
    event.type === 'folder.deleted' || (event.type === 'folder.updated' && 'parent_id' in (event.audit ?? {})),
  async visibleIds(db, actor, ids) {
    if (ids?.length === 0) return []
    return (await visibleFolderIds(db, actor, ids)).map(String)
  },
  existingIds: (db, tenantId, ids) => existingIdsIn(db, 'folders', tenantId, ids),
  async read(db, actor, page) {
    if ('ids' in page && page.ids.length === 0) return []
    return pageRows(await createFoldersService({ db }).listFolders(actor, pageQuery(page)))
  },
}
