import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import { pageQuery, pageRows } from '../../platform/sync/read-pages.js'
import type { SyncSource } from '../../platform/sync/sync-source.js'
import { NOTIFICATION_ENTITY } from './notifications.feed.js'
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
    const only = ids ? sql`and n.id = any(${ids}::uuid[])` : sql``
    const { rows } = await sql<{ id: string }>`select n.id from notifications n
      where n.tenant_id = ${actor.tenantId} and n.notifiable_type = 'user' and n.notifiable_id = ${actor.userId} ${only}`.execute(
      db,
    )
    return rows.map((row) => row.id)
  },
  async existingIds(db: Db, tenantId, ids) {
    if (ids.length === 0) return new Set()
    const { rows } = await sql<{ id: string }>`select id from notifications
      where tenant_id = ${tenantId} and id = any(${ids}::uuid[])`.execute(db)
    return new Set(rows.map((row) => row.id))
  },
  async read(db, actor, page) {
    if ('ids' in page && page.ids.length === 0) return []
    return pageRows(await createNotificationsService({ db }).listNotifications(actor, pageQuery(page)))
  },
}
