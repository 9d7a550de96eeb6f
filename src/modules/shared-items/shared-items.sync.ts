import { pageQuery, pageRows } from '../../platform/sync/read-pages.js'
import type { SyncSource } from '../../platform/sync/sync-source.js'
import * as queries from './shared-items.queries.js'
import { createSharedItemsService } from './shared-items.service.js'

/**
 * Shared items for offline clients (issue 43, decision 0027): the items the user may open, i.e.
 * what `GET /api/shared-items` lists to them (not soft-deleted, the item's `view` grants admit them),
 * presented by that list (the same as `GET /api/shared-items/{id}`). A soft-deleted item is gone for
 * everyone who may open items (`deleted`); a grant that shuts the user out is `access_lost`. Creates
 * record their change in their own statement (decision 0005), so `sharedItem.created` is not watched.
 */
export const sharedItemSyncSource: SyncSource = {
  entity: 'sharedItem',
  idType: 'uuid',
  createsRecorded: true,
  async visibleIds(db, actor, ids) {
    if (ids?.length === 0) return []
    return queries.selectViewableIds(db, actor, ids)
  },
  existingIds: (db, tenantId, ids) => queries.selectLiveIds(db, tenantId, ids),
  async read(db, actor, page, urls) {
    if ('ids' in page && page.ids.length === 0) return []
    return pageRows(await createSharedItemsService({ db, config: urls }).listSharedItems(actor, pageQuery(page)))
  },
}
