import { sql } from 'kysely'
import { hasGrantAccess } from '../../platform/access/access-rule.js'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { Db } from '../../platform/db/schema.js'
import { notFound } from '../../platform/http/errors.js'
import { folderVisibleSql, FOLDER_TYPE_MODULE } from '../folders/index.js'
import type { FolderType } from '../../platform/db/schema.js'

export type ExplainReason = 'admin_bypass' | 'module_permission_missing' | 'unrestricted' | 'direct_grant' | 'inherited_grant' | 'no_matching_grant'

export interface ExplainedGrant {
  id: number
  target_entity: string
  target_entity_id: string
  key: string
  permission_entity: string
  permission_entity_id: number
  matches: boolean
  /** How it names the user (`user`, `role`, `department`), or why it does not. */
  why: string
}

export interface Explanation {
  allowed: boolean
  reason: ExplainReason
  /** The folder whose grants decide (inherited_grant, or the one that blocks). */
  folder_id: number | null
  grants: ExplainedGrant[]
  /** Folder chain, root first, the target last (folders only). */
  path: number[]
}

/** The user as the access rule sees them (the same fields authentication builds). */
async function principalOf(db: Db, tenantId: number, userId: number): Promise<Actor> {
  const user = await db.selectFrom('users as u').innerJoin('roles as r', (j) => j.onRef('r.tenant_id', '=', 'u.tenant_id').onRef('r.id', '=', 'u.role_id'))
    .select(['u.id', 'u.role_id', 'r.permissions', 'u.lang_id'])
    .where('u.tenant_id', '=', tenantId).where('u.id', '=', userId).where('u.deleted_at', 'is', null).executeTakeFirst()
  if (!user) throw notFound('User')
  const departments = await db.selectFrom('department_users').select('department_id').where('tenant_id', '=', tenantId).where('user_id', '=', userId).execute()
  const permissions = new Set(user.permissions as string[])
  return {
    userId, tenantId, roleId: user.role_id, departmentIds: departments.map((d) => d.department_id),
    permissions, isAdmin: permissions.has('*'), langId: user.lang_id, tokenId: 0,
  }
}

async function grantsOf(db: Db, principal: Actor, key: string, target: string, ids: string[]): Promise<ExplainedGrant[]> {
  if (ids.length === 0) return []
  const rows = await db.selectFrom('entity_permissions as ep')
    .select(['ep.id', 'ep.target_entity', 'ep.target_entity_id', 'ep.key', 'ep.permission_entity', 'ep.permission_entity_id'])
    .where('ep.tenant_id', '=', principal.tenantId).where('ep.target_entity', '=', target).where('ep.target_entity_id', 'in', ids).where('ep.key', '=', key)
    .orderBy('ep.id').execute()
  return rows.map((g) => {
    const id = Number(g.permission_entity_id)
    const matches = g.permission_entity === 'user' ? id === principal.userId
      : g.permission_entity === 'role' ? id === principal.roleId
        : principal.departmentIds.includes(id)
    const why = matches ? g.permission_entity
      : g.permission_entity === 'user' ? 'another user' : g.permission_entity === 'role' ? 'the user holds another role' : 'the user is not in this department'
    return { ...g, permission_entity_id: id, matches, why }
  })
}

/**
 * Why `userId` may or may not use `key` on a target. `allowed` is computed by THE access rule — the
 * folder visibility predicate lists use, or `hasGrantAccess` — never re-derived here; the reason and
 * grants only describe it.
 */
export async function explainAccess(db: Db, tenantId: number, query: { userId: number; targetEntity: string; targetEntityId: string; key: string }): Promise<Explanation> {
  const principal = await principalOf(db, tenantId, query.userId)
  if (query.targetEntity !== 'folder') {
    const allowed = await hasGrantAccess(db, principal, query.key, query.targetEntity, query.targetEntityId)
    const grants = await grantsOf(db, principal, query.key, query.targetEntity, [query.targetEntityId])
    const reason: ExplainReason = principal.isAdmin ? 'admin_bypass' : grants.length === 0 ? 'unrestricted' : allowed ? 'direct_grant' : 'no_matching_grant'
    return { allowed, reason, folder_id: null, grants, path: [] }
  }
  const id = Number(query.targetEntityId)
  if (!Number.isSafeInteger(id)) throw notFound('Folder')
  const row = await db.selectFrom('folders as f')
    .select(['f.id', 'f.type', 'f.path', sql<boolean>`${folderVisibleSql(principal, 'f')}`.as('allowed')])
    .where('f.tenant_id', '=', tenantId).where('f.id', '=', id).executeTakeFirst()
  if (!row) throw notFound('Folder')
  const path = (row.path as unknown as Array<number | string>).map(Number)
  const grants = await grantsOf(db, principal, 'view', 'folder', path.map(String))
  const base = { allowed: row.allowed, grants, path }
  if (!can(principal, `${FOLDER_TYPE_MODULE[row.type as FolderType]}.view`)) return { ...base, reason: 'module_permission_missing', folder_id: null }
  if (principal.isAdmin) return { ...base, reason: 'admin_bypass', folder_id: null }
  // per folder on the path, the same rule decides; the first that blocks explains a denial
  const decisions = await Promise.all(path.map(async (folderId) => ({ folderId, allows: await hasGrantAccess(db, principal, 'view', 'folder', folderId) })))
  const blocking = decisions.find((d) => !d.allows)
  if (blocking) return { ...base, reason: 'no_matching_grant', folder_id: blocking.folderId }
  const carrying = [...path].reverse().find((folderId) => grants.some((g) => g.target_entity_id === String(folderId)))
  if (carrying === undefined) return { ...base, reason: 'unrestricted', folder_id: null }
  return { ...base, reason: carrying === id ? 'direct_grant' : 'inherited_grant', folder_id: carrying }
}
