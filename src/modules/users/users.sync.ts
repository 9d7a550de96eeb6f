import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { Db } from '../../platform/db/schema.js'
import type { RawListQuery } from '../../platform/query/parse-query.js'
import { listResource } from '../../platform/query/run-query.js'
import { existingIdsIn, pageQuery, pageRows } from '../../platform/sync/read-pages.js'
import type { SyncRecord, SyncSource, SyncUrls } from '../../platform/sync/sync-source.js'
import * as queries from './users.queries.js'
import { userResource } from './users.resource.js'
import { readsOthersDetails, userQueryContext } from './users.service.js'

const USER_ENTITY = 'user'

/**
 * The directory's users (`GET /api/users`: not deleted, `users.view`), each presented as
 * `GET /api/users/{id}` shows it to the actor: the extended fields for the actor's own record and,
 * with `users.viewDetails` or `users.administrate`, for everyone's (decision 0027).
 */
async function listDirectoryAsShown(db: Db, urls: SyncUrls, actor: Actor, query: RawListQuery) {
  const base = queries.selectUsers(db, actor.tenantId).where('u.deleted_at', 'is', null)
  const extended = readsOthersDetails(actor)
  const rows = pageRows(
    await listResource(userQueryContext({ db, config: urls }, actor, extended), userResource, base, query),
  )
  const own = rows.findIndex((row) => row.id === actor.userId)
  if (extended || own < 0) return rows
  const self: SyncRecord[] = pageRows(
    await listResource(
      userQueryContext({ db, config: urls }, actor, true),
      userResource,
      base.where('u.id', '=', actor.userId),
      {
        limit: 1,
      },
    ),
  )
  return rows.map((row, i) => (i === own ? (self[0] ?? row) : row))
}

/**
 * The user directory for offline clients (issue 43, decision 0027): with `users.view`, every user the
 * directory lists (deactivated ones too, as the list does; deleted ones leave as `access_lost`: their
 * rows and their own GET remain), each as its GET shows it to the actor. A user's own create, update,
 * delete, restore, provisioning and erasure are change records (its events); how far the actor sees
 * (`presentation`) follows the actor's permissions, so a role losing `users.viewDetails` re-sends the
 * directory without the extended fields.
 */
export const userSyncSource: SyncSource = {
  entity: USER_ENTITY,
  idType: 'integer',
  events: ['user.restored', 'user.blackedOut', 'user.provisioned'],
  presentation: (actor) => (readsOthersDetails(actor) ? 'extended' : 'basic'),
  async visibleIds(db, actor, ids) {
    if (!can(actor, 'users.view') || ids?.length === 0) return []
    return queries.selectDirectoryIds(db, actor.tenantId, ids)
  },
  existingIds: (db, tenantId, ids) => existingIdsIn(db, 'users', tenantId, ids),
  async read(db, actor, page, urls) {
    if (!can(actor, 'users.view') || ('ids' in page && page.ids.length === 0)) return []
    return listDirectoryAsShown(db, urls, actor, pageQuery(page))
  },
}
