import { type Expression, type RawBuilder, sql } from 'kysely'
import { grantAllows, grantAllowsWhen, rowGranteeMatches } from '../../platform/access/access-rule.js'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { FolderType } from '../../platform/db/schema.js'
import { folderIdVisibleSql, folderIdVisibleToEachSql } from '../folders/index.js'

/**
 * Who a visibility predicate is about. The content rule (module permission, the record's grants,
 * its folder, its parent record) is written ONCE against this interface and evaluated for
 *  - one actor: the shared access rule (`grantAllows`) and the folders module's `folderIdVisibleSql`;
 *  - every user of a tenant at once (the `vu`/`vr` aliases of a users ⋈ roles scan): the same rules
 *    with the grantee taken from the row (the folders module's `folderIdVisibleToEachSql`) — used for
 *    "notify everyone who can view X" (set-based).
 */
export interface Principal {
  tenantId: number
  /** Admin (`*`) bypass as SQL: constant for an actor, per row for the user set. */
  isAdmin: RawBuilder<boolean>
  can(permission: string): RawBuilder<boolean>
  grant(key: string, targetAlias: string, targetId: Expression<unknown>): RawBuilder<boolean>
  /** The folder with id `folderId` is visible (null → no folder restriction). */
  folderVisible(folderId: Expression<unknown>): RawBuilder<boolean>
}

const bool = (value: boolean) => (value ? sql<boolean>`true` : sql<boolean>`false`)

/** The principal of one authenticated actor: the shared access rule, unchanged. */
export function actorPrincipal(actor: Actor): Principal {
  return {
    tenantId: actor.tenantId,
    isAdmin: bool(actor.isAdmin),
    can: (permission) => bool(can(actor, permission)),
    grant: (key, alias, id) => grantAllows(actor, key, alias, id),
    folderVisible: (folderId) => folderIdVisibleSql(actor, folderId),
  }
}

/** The shared access rule with the grantee taken from the scanned user row `vu`. */
function userGrantAllows(tenantId: number, key: string, alias: string, id: Expression<unknown>): RawBuilder<boolean> {
  return grantAllowsWhen(tenantId, rowGranteeMatches(tenantId, sql.ref('vu.id'), sql.ref('vu.role_id')), key, alias, id)
}

/**
 * The principal "each user row `vu` of the tenant" (joined with its role as `vr`). Folder visibility is
 * the folders module's rule for a set of users; `folderType` is the type of the records' folders.
 */
export function userSetPrincipal(tenantId: number, folderType?: FolderType): Principal {
  const canSql = (permission: string) => sql<boolean>`(vr.permissions && array[${permission}, '*']::text[])`
  const allowsView = (folderId: Expression<unknown>) => userGrantAllows(tenantId, 'view', 'folder', folderId)
  return {
    tenantId,
    isAdmin: sql<boolean>`('*' = any(vr.permissions))`,
    can: canSql,
    grant: (key, alias, id) => userGrantAllows(tenantId, key, alias, id),
    folderVisible: (folderId) => folderIdVisibleToEachSql(tenantId, folderId, folderType, { can: canSql, allowsView }),
  }
}
