import { hasGrantAccess } from '../../platform/access/access-rule.js'
import type { Actor } from '../../platform/auth/actor.js'
import { holdsEvery } from '../../platform/auth/permissions.js'
import type { Db } from '../../platform/db/schema.js'
import { invalidField, notFound } from '../../platform/http/errors.js'
import { lookupTarget, parseTargetId } from '../entity-permissions/index.js'
import { FOLDER_TYPE_MODULE } from '../folders/index.js'
import type { FolderType } from '../../platform/db/schema.js'
import * as queries from './access.queries.js'

export type ExplainReason =
  | 'admin_bypass'
  | 'module_permission_missing'
  | 'target_deleted'
  | 'unrestricted'
  | 'direct_grant'
  | 'inherited_grant'
  | 'no_matching_grant'
export const EXPLAIN_REASONS: readonly ExplainReason[] = [
  'admin_bypass',
  'module_permission_missing',
  'target_deleted',
  'unrestricted',
  'direct_grant',
  'inherited_grant',
  'no_matching_grant',
]

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

export interface TargetRef {
  target_entity: string
  target_entity_id: string
}

export interface Explanation {
  allowed: boolean
  reason: ExplainReason
  /** The folder whose grants decide (inherited_grant from a folder, or the folder that blocks). */
  folder_id: number | null
  /** The target, record or folder whose grants decide (direct/inherited grant, or the one that blocks). */
  decided_by: TargetRef | null
  grants: ExplainedGrant[]
  /** Folder chain, root first: the folder the target inherits from (a folder target is the last element). */
  path: number[]
  /** The records whose own grants apply: the target first, then the records it lives in (view only). */
  records: TargetRef[]
}

/** The user as the access rule sees them (the same fields authentication builds). */
async function principalOf(db: Db, tenantId: number, userId: number): Promise<Actor> {
  const user = await queries.findPrincipalRow(db, tenantId, userId)
  if (!user) throw notFound('User')
  const permissions = new Set(user.permissions as string[])
  return {
    userId,
    tenantId,
    roleId: user.role_id,
    departmentIds: user.department_ids.map(Number),
    permissions,
    isAdmin: permissions.has('*'),
    langId: user.lang_id,
    tokenId: 0,
  }
}

async function grantsOf(
  db: Db,
  principal: Actor,
  key: string,
  target: string,
  ids: string[],
): Promise<ExplainedGrant[]> {
  if (ids.length === 0) return []
  const rows = await queries.grantsOn(db, principal.tenantId, key, target, ids)
  return rows.map((g) => {
    const id = Number(g.permission_entity_id)
    const matches =
      g.permission_entity === 'user'
        ? id === principal.userId
        : g.permission_entity === 'role'
          ? id === principal.roleId
          : principal.departmentIds.includes(id)
    const why = matches
      ? g.permission_entity
      : g.permission_entity === 'user'
        ? 'another user'
        : g.permission_entity === 'role'
          ? 'the user holds another role'
          : 'the user is not in this department'
    return { ...g, permission_entity_id: id, matches, why }
  })
}

const ref = (target_entity: string, target_entity_id: string | number): TargetRef => ({
  target_entity,
  target_entity_id: String(target_entity_id),
})

/**
 * Why `userId` may or may not use `key` on a target. `allowed` is computed by THE rule of the
 * target's lists — the registered target's `isVisible` (folders: the folder visibility predicate;
 * content: the content rule with its folder and parent; shared items: their view rule) for `view`,
 * the access rule on the target's own grants for other keys — never re-derived here. The reason,
 * grants and path only describe it, from the parts that rule checks (the target's view chain).
 */
export async function explainAccess(
  db: Db,
  tenantId: number,
  query: { userId: number; targetEntity: string; targetEntityId: string; key: string },
): Promise<Explanation> {
  const found = lookupTarget(query.targetEntity)
  if ('problem' in found) throw invalidField('target_entity', found.problem)
  const target = found.target
  const id = parseTargetId(target, query.targetEntityId)
  if (id === undefined) throw notFound('Target')
  // both looked up at once; a missing target is reported before a missing user, always
  const [keysResult, principalResult] = await Promise.allSettled([
    target.allowedKeys(db, tenantId, id),
    principalOf(db, tenantId, query.userId),
  ])
  if (keysResult.status === 'rejected') throw keysResult.reason
  const keys = keysResult.value
  if (!keys) throw notFound('Target')
  if (principalResult.status === 'rejected') throw principalResult.reason
  const principal = principalResult.value
  if (!keys.includes(query.key)) throw invalidField('key', `must be one of: ${keys.join(', ')}`)
  const self = ref(target.alias, id)

  if (query.key !== 'view') {
    // other keys: the access rule on the target's own grants (not inherited)
    const allowed = await hasGrantAccess(db, principal, query.key, target.alias, id)
    const grants = await grantsOf(db, principal, query.key, target.alias, [String(id)])
    const reason: ExplainReason = principal.isAdmin
      ? 'admin_bypass'
      : grants.length === 0
        ? 'unrestricted'
        : allowed
          ? 'direct_grant'
          : 'no_matching_grant'
    return {
      allowed,
      reason,
      folder_id: null,
      decided_by: grants.length > 0 && !principal.isAdmin ? self : null,
      grants,
      path: [],
      records: [self],
    }
  }

  const [allowed, chain] = await Promise.all([target.isVisible(db, principal, id), target.viewChain(db, tenantId, id)])
  if (!chain) throw notFound('Target')
  const folder = chain.folderId === null ? undefined : await queries.findFolderPath(db, tenantId, chain.folderId)
  const path = folder ? folder.path.map(Number) : []
  const records = chain.records.map((r) => ref(r.target_entity, r.target_entity_id))
  const links = [...records, ...path.map((folderId) => ref('folder', folderId))]
  const [grantLists, allows] = await Promise.all([
    Promise.all(
      [...new Set(links.map((r) => r.target_entity))].map((alias) =>
        grantsOf(
          db,
          principal,
          'view',
          alias,
          links.filter((r) => r.target_entity === alias).map((r) => r.target_entity_id),
        ),
      ),
    ),
    queries.linksAllow(db, principal, links),
  ])
  const grants = grantLists.flat()
  const base = { allowed, grants, path, records }
  const permissions = [
    ...chain.records.flatMap((r) => (r.permission ? [r.permission] : [])),
    ...(folder ? [`${FOLDER_TYPE_MODULE[folder.type as FolderType]}.view`] : []),
  ]
  if (!holdsEvery(principal, permissions))
    return { ...base, reason: 'module_permission_missing', folder_id: null, decided_by: null }
  if (chain.deleted) return { ...base, reason: 'target_deleted', folder_id: null, decided_by: null }
  if (principal.isAdmin) return { ...base, reason: 'admin_bypass', folder_id: null, decided_by: null }
  // every link must let the user through (the records, then the folder path from the root): the first that does not explains a denial
  const blocking = links.find((_link, i) => !allows[i])
  const folderOf = (link: TargetRef) => (link.target_entity === 'folder' ? Number(link.target_entity_id) : null)
  if (blocking) return { ...base, reason: 'no_matching_grant', folder_id: folderOf(blocking), decided_by: blocking }
  // the grants nearest to the target decide: its own, the records it lives in, then its folder upwards
  const nearestFirst = [...records, ...[...path].reverse().map((folderId) => ref('folder', folderId))]
  const carrying = nearestFirst.find((link) =>
    grants.some((g) => g.target_entity === link.target_entity && g.target_entity_id === link.target_entity_id),
  )
  if (!carrying) return { ...base, reason: 'unrestricted', folder_id: null, decided_by: null }
  const direct = carrying.target_entity === self.target_entity && carrying.target_entity_id === self.target_entity_id
  return {
    ...base,
    reason: direct ? 'direct_grant' : 'inherited_grant',
    folder_id: folderOf(carrying),
    decided_by: carrying,
  }
}
