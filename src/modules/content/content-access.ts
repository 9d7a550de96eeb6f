import { type Expression, type RawBuilder, sql } from 'kysely'
import { grantAllows, grantAllowsWhen, rowGranteeMatches } from '../../platform/access/access-rule.js'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'

/**
 * Who a visibility predicate is about. The content rule (module permission, the record's grants,
 * its folder, its parent record) is written ONCE against this interface and evaluated for
 *  - one actor: the shared access rule (`grantAllows`) and the folders module's `folderIdVisibleSql`;
 *  - every user of a tenant at once (the `vu`/`vr` aliases of a users ⋈ roles scan): the same rule
 *    with the grantee taken from the row — used for "notify everyone who can view X" (set-based).
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

/** Folder visibility for one actor, provided by the folders module (platform never imports modules). */
export type FolderIdVisibleSql = (actor: Actor, folderId: Expression<unknown>) => RawBuilder<boolean>

/** The principal of one authenticated actor: the shared access rule, unchanged. */
export function actorPrincipal(actor: Actor, folderIdVisible: FolderIdVisibleSql): Principal {
  return {
    tenantId: actor.tenantId,
    isAdmin: bool(actor.isAdmin),
    can: (permission) => bool(can(actor, permission)),
    grant: (key, alias, id) => grantAllows(actor, key, alias, id),
    folderVisible: (folderId) => folderIdVisible(actor, folderId),
  }
}

/** The shared access rule with the grantee taken from the scanned user row `vu`. */
function userGrantAllows(tenantId: number, key: string, alias: string, id: Expression<unknown>): RawBuilder<boolean> {
  return grantAllowsWhen(tenantId, rowGranteeMatches(tenantId, sql.ref('vu.id'), sql.ref('vu.role_id')), key, alias, id)
}

/**
 * The principal "each user row `vu` of the tenant" (joined with its role as `vr`). Folder view grants
 * are effective down the tree exactly as in the folders module: no folder on the path carries view
 * grants that leave the user out. `folderModule` is the module of the record's folder type.
 */
export function userSetPrincipal(tenantId: number, folderModule?: string): Principal {
  const canSql = (permission: string) => sql<boolean>`(vr.permissions && array[${permission}, '*']::text[])`
  return {
    tenantId,
    isAdmin: sql<boolean>`('*' = any(vr.permissions))`,
    can: canSql,
    grant: (key, alias, id) => userGrantAllows(tenantId, key, alias, id),
    folderVisible: (folderId) => sql<boolean>`(${folderId} is null or exists (
      select 1 from folders vf where vf.tenant_id = ${tenantId} and vf.id = ${folderId}
        and ${folderModule ? canSql(`${folderModule}.view`) : sql`true`}
        and not exists (select 1 from unnest(vf.path) as anc(id)
          where not ${userGrantAllows(tenantId, 'view', 'folder', sql.ref('anc.id'))})))`,
  }
}
