import { hasGrantAccess } from '../../platform/access/access-rule.js'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { Db } from '../../platform/db/schema.js'
import type { GrantTarget } from '../entity-permissions/index.js'
import { folderGrantKeys, managePermission } from './folder-types.js'
import * as queries from './folders.queries.js'
import { folderVisibleSql } from './folders-visibility.queries.js'

/**
 * "Administrate access" on a folder (contract 20): the type's `<module>.manage`, and — when the
 * folder carries `administrate` grants — being a grantee of one (the access rule, key `administrate`).
 */
export async function canAdministrateFolder(
  db: Db,
  actor: Actor,
  folder: Pick<queries.FolderRow, 'id' | 'type'>,
): Promise<boolean> {
  if (!can(actor, managePermission(folder.type))) return false
  return hasGrantAccess(db, actor, 'administrate', 'folder', folder.id)
}

/** The `folder` alias in the entity-permission target registry. */
export const folderGrantTarget: GrantTarget = {
  alias: 'folder',
  table: 'folders',
  idType: 'integer',
  async allowedKeys(db, tenantId, id) {
    const folder = await queries.findFolder(db, tenantId, Number(id))
    return folder ? folderGrantKeys(folder.type) : undefined
  },
  async canAdministrate(db, actor, id) {
    const folder = await queries.findFolder(db, actor.tenantId, Number(id))
    return folder !== undefined && canAdministrateFolder(db, actor, folder)
  },
  async isVisible(db, actor, id) {
    const visible = await queries
      .selectFolders(db, actor.tenantId)
      .select('f.id')
      .where('f.id', '=', Number(id))
      .where(folderVisibleSql(actor, 'f'))
      .executeTakeFirst()
    return visible !== undefined
  },
  async viewChain(db, tenantId, id) {
    // a folder's visibility is its path's (folderVisibleSql): no records of its own besides the folder
    const folder = await queries.findFolder(db, tenantId, Number(id))
    return folder && { records: [], folderId: folder.id }
  },
  async loadBasic(db, tenantId, ids) {
    const rows = await queries.selectBasicFolders(db, tenantId, ids.map(Number))
    return new Map(rows.map((row) => [String(row.id), row]))
  },
}
