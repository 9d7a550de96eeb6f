import { type Expression, sql, type SqlBool } from 'kysely'
import { grantAllows, hasGrantAccess } from '../../platform/access/access-rule.js'
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

/** SQL: the actor may view the shared item `si` (contract 30: not soft-deleted, `view` grants admit them). */
export function viewableSql(actor: Actor): Expression<SqlBool> {
  return sql<boolean>`(si.deleted_at is null and ${grantAllows(actor, 'view', 'sharedItem', sql.ref('si.id'))})` as Expression<SqlBool>
}

/**
 * SQL: the actor administrates `si` (contract 30): `administrateAll` → every item; otherwise
 * `administrate` and the item's `administrate` grants (unrestricted items stay administrable).
 * Soft-deleted items included.
 */
export function administrableSql(actor: Actor): Expression<SqlBool> {
  if (can(actor, ADMINISTRATE_ALL)) return sql<boolean>`true` as Expression<SqlBool>
  if (!can(actor, ADMINISTRATE)) return sql<boolean>`false` as Expression<SqlBool>
  return grantAllows(actor, 'administrate', 'sharedItem', sql.ref('si.id')) as Expression<SqlBool>
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
    const { rows } =
      await sql`select 1 from shared_items si where si.tenant_id = ${actor.tenantId} and si.id = ${String(id)}::uuid
      and ${viewableSql(actor)}`.execute(db)
    return rows.length > 0
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
