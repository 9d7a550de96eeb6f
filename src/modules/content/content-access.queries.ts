import { type Expression, type RawBuilder, sql } from 'kysely'
import { grantAllows, grantAllowsWhen, rowGranteeMatches } from '../../platform/access/access-rule.js'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { FolderType } from '../../platform/db/schema.js'
import { folderIdVisibleSql, folderIdVisibleToEachSql } from '../folders/index.js'
import type { ContentDeclaration, Principal } from './content-declaration.js'

// The content rule as SQL (contract 30: module permission → the record's grants → its folder → its
// parent), written once against a `Principal`: one actor, or every user of a tenant at once.

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

/** The parts of a content declaration the content rule reads. */
export type RuleDeclaration = Pick<
  ContentDeclaration,
  'alias' | 'table' | 'module' | 'tree' | 'folder' | 'parent' | 'viewRule'
>

/** SQL: the record of `decl` under `alias` is visible to the principal (the one content rule). */
export function contentVisibleSql(decl: RuleDeclaration, p: Principal, alias: string): RawBuilder<boolean> {
  const parts: RawBuilder<boolean>[] = [p.grant('view', decl.alias, sql.ref(`${alias}.id`))]
  if (decl.tree) parts.push(notRestrictedAbove(decl, p, alias, decl.tree.column))
  if (decl.folder) parts.push(p.folderVisible(sql.ref(`${alias}.${decl.folder.column}`)))
  if (decl.parent) {
    const pa = `${alias}p`
    const column = sql.ref(`${alias}.${decl.parent.column}`)
    parts.push(sql<boolean>`(${column} is null or exists (select 1 from ${sql.table(decl.parent.resource.table)} as ${sql.id(pa)}
        where ${sql.ref(`${pa}.tenant_id`)} = ${p.tenantId} and ${sql.ref(`${pa}.id`)} = ${column}
        and ${decl.parent.resource.visibleTo(p, pa)}))`)
  }
  if (decl.viewRule) parts.push(decl.viewRule(p, alias))
  return sql<boolean>`(${p.can(`${decl.module}.view`)} and (${p.isAdmin} or (${sql.join(parts, sql` and `)})))`
}

/**
 * SQL: no record above the one under `alias` (its parent, the parent's parent, …) carries `view`
 * grants that exclude the principal. One statement: the ancestors by a recursive walk (tenant-scoped
 * at every step; `union` ends a cycle), each decided by THE access rule, as the folder path is.
 */
function notRestrictedAbove(decl: RuleDeclaration, p: Principal, alias: string, column: string): RawBuilder<boolean> {
  const above = `${alias}_above`
  const up = `${alias}_up`
  return sql<boolean>`not exists (
      with recursive ${sql.id(above)}(id) as (
        select ${sql.ref(`${alias}.${column}`)}
        union
        select ${sql.ref(`${up}.${column}`)} from ${sql.table(decl.table)} as ${sql.id(up)}
          join ${sql.id(above)} on ${sql.ref(`${up}.id`)} = ${sql.ref(`${above}.id`)}
          where ${sql.ref(`${up}.tenant_id`)} = ${p.tenantId} and ${sql.ref(`${up}.${column}`)} is not null
      )
      select 1 from ${sql.id(above)} where ${sql.ref(`${above}.id`)} is not null
        and not ${p.grant('view', decl.alias, sql.ref(`${above}.id`))})`
}
