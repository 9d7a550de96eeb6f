import type { Db } from '../../platform/db/schema.js'
import { pageQuery, pageRows } from '../../platform/sync/read-pages.js'
import type { SyncSource } from '../../platform/sync/sync-source.js'
import { NOTIFICATION_ENTITY } from './notifications.feed.js'
import * as queries from './notifications.queries.js'
import { createNotificationsService } from './notifications.service.js'

/**
 * The user's own notifications for offline clients (issue 43): a notification belongs to its
 * recipient, no other rule; presented by the notifications list (the same as its GET). Creations and
 * marks record changes where they are written; bulk deletions (reset, retention) record an access
 * change, so the clients' views are recomputed and the records gone come back as `deleted`.
 */
export const notificationSyncSource: SyncSource = {
  entity: NOTIFICATION_ENTITY,
  idType: 'uuid',
  async visibleIds(db, actor, ids) {
    if (ids?.length === 0) return []
    return queries.selectOwnNotificationIds(db, actor.tenantId, actor.userId, ids)
  },
  async existingIds(db: Db, tenantId, ids) {
    if (ids.length === 0) return new Set()
    return queries.selectExistingNotificationIds(db, tenantId, ids)
  },
  async read(db, actor, page) {
    if ('ids' in page && page.ids.length === 0) return []
    return pageRows(await createNotificationsService({ db }).listNotifications(actor, pageQuery(page)))
  },
}
