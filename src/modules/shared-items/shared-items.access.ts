import type { Expression, SqlBool } from 'kysely'
import { hasGrantAccess } from '../../platform/access/access-rule.js'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { Db } from '../../platform/db/schema.js'
import { forbidden } from '../../platform/http/errors.js'
import type { GrantTarget } from '../entity-permissions/index.js'
import * as queries from './shared-items.queries.js'

export const ADMINISTRATE = 'sharedItems.administrate'
export const ADMINISTRATE_ALL = 'sharedItems.administrateAll'

/** The administration area: `sharedItems.administrate` or `sharedItems.administrateAll`; 403 otherwise. */
export function requireAdministrationArea(actor: Actor): void {
  if (!can(actor, ADMINISTRATE) && !can(actor, ADMINISTRATE_ALL)) {
    throw forbidden(`This requires the "${ADMINISTRATE}" or "${ADMINISTRATE_ALL}" permission`)
  }
}

export { viewableSql } from './shared-items.queries.js'

/**
 * SQL: the actor administrates `si` (contract 30): `administrateAll` → every item; otherwise
 * `administrate` and the item's `administrate` grants (unrestricted items stay administrable).
 * Soft-deleted items included.
 */
export function administrableSql(actor: Actor): Expression<SqlBool> {
  return queries.administrableSql(
    actor,
    can(actor, ADMINISTRATE_ALL) ? 'all' : can(actor, ADMINISTRATE) ? 'granted' : 'none',
  )
}

/** Whether the actor administrates one shared item. */
export async function canAdministrateSharedItem(db: Db, actor: Actor, id: string): Promise<boolean> {
  if (can(actor, ADMINISTRATE_ALL)) return true
  return can(actor, ADMINISTRATE) && hasGrantAccess(db, actor, 'administrate', 'sharedItem', id)
}

/** The keys of grants on a shared item (contract 20). */
export const SHARED_ITEM_GRANT_KEYS: readonly string[] = ['view', 'administrate']

/** `sharedItem` as a grant target (contract 20: keys view, administrate). */
export const sharedItemGrantTarget: GrantTarget = {
  alias: 'sharedItem',
  table: 'shared_items',
  idType: 'uuid',
  async allowedKeys(db, tenantId, id) {
    const row = await queries.findSharedItem(db, tenantId, String(id))
    return row ? SHARED_ITEM_GRANT_KEYS : undefined
  },
  canAdministrate: (db, actor, id) => canAdministrateSharedItem(db, actor, String(id)),
  async isVisible(db, actor, id) {
    return queries.isViewableSharedItem(db, actor, String(id))
  },
  async viewChain(db, tenantId, id) {
    // viewableSql: not soft-deleted and the item's own view grants; shared items live in no folder
    const row = await queries.findSharedItem(db, tenantId, String(id))
    return (
      row && {
        records: [{ target_entity: 'sharedItem', target_entity_id: row.id }],
        folderId: null,
        deleted: row.deleted_at !== null,
      }
    )
  },
  async loadBasic(db, tenantId, ids) {
    const rows = await queries.selectBasicSharedItems(db, tenantId, ids.map(String))
    return new Map(rows.map((row): [string, Record<string, unknown>] => [row.id, row]))
  },
}
