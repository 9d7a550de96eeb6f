import { type Expression, type RawBuilder, sql } from 'kysely'
import { grantAllows } from '../../platform/access/access-rule.js'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { Db, FolderType } from '../../platform/db/schema.js'
import { FOLDER_TYPES, viewPermission } from './folder-types.js'

/** Folder types whose module view permission the actor holds (module permissions come first, §6). */
export function viewableFolderTypes(actor: Pick<Actor, 'permissions'>): FolderType[] {
  return FOLDER_TYPES.filter((type) => can(actor, viewPermission(type)))
}

/** The SQL of folder visibility (predicates other modules' statements use) and the statements asking it. */

/**
 * SQL: no folder on the row's path (its ancestors and itself) carries `view` grants that exclude the
 * viewer (one actor, or each user of a scan: `allowsView`) — view grants are effective down the tree. One index scan per row: the view grants whose
 * target is on the path (`= any(path)` on the grants' unique index); a folder without any such grant
 * (most) costs nothing more, and only a folder on the path that carries grants is decided by THE
 * access rule (`grantAllows`). No per-request set, no per-row walk of the tree
 * (docs/decisions/folders-tree-visibility.md has the measurements). `offset 0` keeps the probe per
 * row: without it PostgreSQL may turn the `not exists` into an anti-join that first decides every
 * restricted folder of the tenant, then filters the pairs, and its generic plan did after an analyze
 * (2.1 ms instead of 0.4 for 50 folders of the small tenant; decision 0005, ninth pass).
 */
function notBlockedByPath(tenantId: number, alias: string, allowsView: AllowsView): RawBuilder<boolean> {
  return sql<boolean>`not exists (
    select 1 from entity_permissions restricting
    where restricting.tenant_id = ${tenantId} and restricting.target_entity = 'folder'
      and restricting.target_entity_id = any(${sql.ref(`${alias}.path`)}::text[]) and restricting.key = 'view'
      and not ${allowsView(sql.ref('restricting.target_entity_id'))}
    offset 0)`
}

/** THE access rule for `view` on the folder `folderId`, for whoever the predicate is about. */
type AllowsView = (folderId: Expression<unknown>) => RawBuilder<boolean>

/**
 * SQL predicate: the folder row under `alias` is visible to the actor (contract 00 §6): the
 * type's module view permission, and view grants effective down the tree. Administrators see all.
 */
export function folderVisibleSql(actor: Actor, alias = 'f'): RawBuilder<boolean> {
  const types = viewableFolderTypes(actor)
  if (types.length === 0) return sql<boolean>`false`
  const typeCheck = sql<boolean>`${sql.ref(`${alias}.type`)} in (${sql.join(types)})`
  if (actor.isAdmin) return typeCheck
  const allowsView: AllowsView = (folderId) => grantAllows(actor, 'view', 'folder', folderId)
  return sql<boolean>`(${typeCheck} and ${notBlockedByPath(actor.tenantId, alias, allowsView)})`
}

/**
 * SQL predicate for content modules: a record whose folder id is `folderId` inherits the folder's
 * visibility (no folder → no folder restriction). Use next to the module's own permission check.
 */
export function folderIdVisibleSql(actor: Actor, folderId: Expression<unknown>): RawBuilder<boolean> {
  return sql<boolean>`(${folderId} is null or exists (
    select 1 from folders vf where vf.tenant_id = ${actor.tenantId} and vf.id = ${folderId} and ${folderVisibleSql(actor, 'vf')}
  ))`
}

/**
 * Each user of a scan at once (the content module's "who can view X", set-based): the user's role
 * permissions as SQL (`can`), and THE access rule with the grantee taken from the scanned row
 * (`allowsView`). Administrators are not special here: the caller's rule lets `*` through.
 */
export interface FolderViewerSet {
  can(permission: string): RawBuilder<boolean>
  allowsView: AllowsView
}

/**
 * SQL predicate, `folderIdVisibleSql` for each user of a scan: a record in folder `folderId` of `type`
 * (null → no folder restriction) is visible when the user holds the type's view permission and no
 * folder on the path carries view grants that leave the user out (the same path rule as for one actor).
 */
export function folderIdVisibleToEachSql(
  tenantId: number,
  folderId: Expression<unknown>,
  type: FolderType | undefined,
  viewers: FolderViewerSet,
): RawBuilder<boolean> {
  const typeCheck = type ? viewers.can(viewPermission(type)) : sql<boolean>`true`
  return sql<boolean>`(${folderId} is null or exists (
    select 1 from folders vf where vf.tenant_id = ${tenantId} and vf.id = ${folderId}
      and ${typeCheck} and ${notBlockedByPath(tenantId, 'vf', viewers.allowsView)}))`
}

/**
 * Whether a body's folder reference names a folder of `type` in the actor's tenant that the actor may
 * see (issue 33): another tenant's folder, a hidden one and a missing one are alike "no such folder".
 */
export async function isUsableFolder(db: Db, actor: Actor, type: FolderType, folderId: number): Promise<boolean> {
  const { rows } = await sql`select 1 from folders f where f.tenant_id = ${actor.tenantId} and f.id = ${folderId}
    and f.type = ${type} and ${folderVisibleSql(actor, 'f')}`.execute(db)
  return rows.length > 0
}

/** The folders among `ids` (all of the tenant's when not given) that the actor may see. */
export async function visibleFolderIds(db: Db, actor: Actor, ids?: readonly (string | number)[]): Promise<number[]> {
  const only = ids ? sql`and f.id = any(${ids.map(Number)}::bigint[])` : sql``
  const { rows } = await sql<{ id: number }>`select f.id from folders f
    where f.tenant_id = ${actor.tenantId} ${only} and ${folderVisibleSql(actor, 'f')}`.execute(db)
  return rows.map((row) => row.id)
}
