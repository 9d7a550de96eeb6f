import { type Expression, type RawBuilder, sql } from 'kysely'
import { grantAllows } from '../../platform/access/access-rule.js'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { FolderType } from '../../platform/db/schema.js'
import { FOLDER_TYPES, viewPermission } from './folder-types.js'

/** Folder types whose module view permission the actor holds (module permissions come first, §6). */
export function viewableFolderTypes(actor: Pick<Actor, 'permissions'>): FolderType[] {
  return FOLDER_TYPES.filter((type) => can(actor, viewPermission(type)))
}

/**
 * SQL: ids of the tenant's folders that carry `view` grants which do not let the actor through.
 * The decision per folder is THE access rule (`grantAllows`), evaluated only on folders that carry
 * view grants at all (one pass over the tenant's folder view grants).
 */
function blockingFolderIds(actor: Actor): RawBuilder<unknown> {
  return sql`
    select restricted.target_entity_id::bigint as id
    from (
      select distinct g.target_entity_id from entity_permissions g
      where g.tenant_id = ${actor.tenantId} and g.target_entity = 'folder' and g.key = 'view'
    ) restricted
    where not ${grantAllows(actor, 'view', 'folder', sql.ref('restricted.target_entity_id'))}`
}

/**
 * SQL: no folder on the row's path (its ancestors and itself) blocks the actor — view grants are
 * effective down the tree. Written so that Postgres builds the blocking set ONCE per statement as a
 * hashed subplan (`(… in (…)) is true` keeps the planner from turning it into a per-row join) and
 * then probes it once per path element: a list costs O(rows × depth), and `limit 50` stays cheap
 * on a 10,000-folder tenant (docs/decisions/folders-tree-visibility.md has the measurements).
 */
function notBlockedByPath(actor: Actor, alias: string): RawBuilder<boolean> {
  return sql<boolean>`not exists (
    select 1 from unnest(${sql.ref(`${alias}.path`)}) as ancestor(id)
    where (ancestor.id in (${blockingFolderIds(actor)})) is true)`
}

/**
 * SQL predicate: the folder row under `alias` is visible to the actor (contract 00 §6): the
 * type's module view permission, and view grants effective down the tree. Administrators see all.
 */
export function folderVisibleSql(actor: Actor, alias = 'f'): RawBuilder<boolean> {
  const types = viewableFolderTypes(actor)
  if (types.length === 0) return sql<boolean>`false`
  const typeCheck = sql<boolean>`${sql.ref(`${alias}.type`)} in (${sql.join(types)})`
  if (actor.isAdmin) return typeCheck
  return sql<boolean>`(${typeCheck} and ${notBlockedByPath(actor, alias)})`
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
