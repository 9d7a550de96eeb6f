import { existingIdsIn } from '../../../platform/sync/read-pages.js'
import type { SyncSource } from '../../../platform/sync/sync-source.js'
import { NOTIFICATION_PREFERENCES_ENTITY } from '../notifications.feed.js'
import { readPreferences } from './preferences.js'

/**
 * The user's own notification preferences for offline clients (issue 43): one record, the user's,
 * presented by `GET /api/users/current/notification-preferences` (`readPreferences`); its id is the
 * user's id (the GET carries none). A change of them records a change where they are written.
 */
export const preferencesSyncSource: SyncSource = {
  entity: NOTIFICATION_PREFERENCES_ENTITY,
  idType: 'integer',
  idOf: (_record, actor) => actor.userId,
  visibleIds(_db, actor, ids) {
    const own = String(actor.userId)
    return Promise.resolve(ids === undefined || ids.includes(own) ? [own] : [])
  },
  existingIds: (db, tenantId, ids) => existingIdsIn(db, 'users', tenantId, ids),
  async read(db, actor, page) {
    const wanted = 'ids' in page ? page.ids.includes(String(actor.userId)) : page.after === null
    return wanted ? [await readPreferences(db, actor)] : []
  },
}
