import type { AppDeps } from '../../platform/app-module.js'
import { diff } from '../audit/index.js'
import { actingUserId, type Actor } from '../../platform/auth/actor.js'
import { exceedsOwnPermissions, holdsEvery, PERMISSION_BEYOND_ACTOR } from '../../platform/auth/permissions.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { downgradeToMfaEnrollment } from '../../platform/auth/tokens.js'
import { conflict, FieldErrorCollector, invalidField, notFound } from '../../platform/http/errors.js'
import type { RawListQuery } from '../../platform/query/parse-query.js'
import { listResource, showResource } from '../../platform/query/run-query.js'
import type { Db } from '../../platform/db/schema.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { recordSyncWrites } from '../../platform/sync/change-log.js'
import { isUsableFolder } from '../folders/index.js'
import { isKnownPermission } from './permissions.js'
import * as queries from './roles.queries.js'
import { roleResource } from './roles.resource.js'
import type { CreateRoleBody, UpdateRoleBody } from './roles.schemas.js'

export type RolesService = ReturnType<typeof createRolesService>

/** Known permission strings (else 422), each held by the actor: no one grants what they do not hold (else 403). */
function checkPermissions(actor: Actor, permissions: string[] | undefined): void {
  const problems = new FieldErrorCollector()
  permissions?.forEach((p, i) => {
    if (!isKnownPermission(p)) problems.add(`permissions.${i}`, `unknown permission "${p}"`)
  })
  problems.throwIfAny()
  const beyond: Record<string, string> = {}
  permissions?.forEach((p, i) => {
    if (!holdsEvery(actor, [p])) beyond[`permissions.${i}`] = PERMISSION_BEYOND_ACTOR
  })
  if (Object.keys(beyond).length > 0) throw exceedsOwnPermissions(beyond)
}

/** A body's `folder_id` names a visible role folder of the actor's tenant (else 422, like a missing one). */
async function checkFolder(db: Db, actor: Actor, folderId: number | null | undefined): Promise<void> {
  if (typeof folderId === 'number' && !(await isUsableFolder(db, actor, 'role', folderId)))
    throw invalidField('folder_id', 'no such role folder')
}

/** A role's event (audited, and delivered to the automations listening): `data` names the changed fields only. */
const roleEvent = (actor: Actor, type: string, id: number) => ({
  type,
  tenantId: actor.tenantId,
  actorId: actingUserId(actor),
  subjectType: 'role',
  subjectId: id,
})

export function createRolesService({ db }: AppDeps) {
  const ctx = (actor: Actor) => ({ db, tenantId: actor.tenantId, actor })

  /** Lists the tenant's roles. */
  async function listRoles(actor: Actor, query: RawListQuery) {
    requirePermission(actor, 'roles.view')
    return listResource(ctx(actor), roleResource, queries.selectRoles(db, actor.tenantId), query)
  }

  /** Shows one role of the tenant. */
  async function getRole(actor: Actor, id: number, query: RawListQuery = {}) {
    requirePermission(actor, 'roles.view')
    return showResource(
      ctx(actor),
      roleResource,
      queries.selectRoles(db, actor.tenantId).where('r.id', '=', id),
      query,
      'Role',
    )
  }

  /** Creates a role from known permission strings. */
  async function createRole(actor: Actor, body: CreateRoleBody) {
    requirePermission(actor, 'roles.manage')
    checkPermissions(actor, body.permissions)
    await checkFolder(db, actor, body.folder_id)
    const { id } = await db.transaction().execute(async (trx) => {
      const row = await queries.insertRole(trx, actor.tenantId, body)
      await recordDomainEvent(trx, {
        ...roleEvent(actor, 'role.created', row.id),
        data: { changed: Object.keys(diff(undefined, body)) },
        audit: diff(undefined, body),
      })
      return row
    })
    return getRole(actor, id)
  }

  /** Updates a role. */
  async function updateRole(actor: Actor, id: number, body: UpdateRoleBody) {
    requirePermission(actor, 'roles.manage')
    checkPermissions(actor, body.permissions)
    await db.transaction().execute(async (trx) => {
      const before = await queries.findRoleForUpdate(trx, actor.tenantId, id)
      const updated = await queries.updateRole(trx, actor.tenantId, id, body)
      if (!updated) throw notFound('Role')
      await checkFolder(trx, actor, body.folder_id)
      // sessions from before the role required MFA may only enroll now (issue 39)
      if (body.requires_mfa === true && before && !before.requires_mfa)
        await downgradeToMfaEnrollment(trx, actor.tenantId, { roleId: id })
      // the role's members may see more or less now (offline clients recompute their view, issue 43)
      await recordSyncWrites(trx, actor.tenantId, { access: [{ scope: 'role', id }] })
      const changes = diff(before, body)
      await recordDomainEvent(trx, {
        ...roleEvent(actor, 'role.updated', id),
        data: { changed: Object.keys(changes) },
        audit: changes,
      })
    })
    return getRole(actor, id)
  }

  /** Deletes a role; refused with 409 while users hold it. */
  async function deleteRole(actor: Actor, id: number) {
    requirePermission(actor, 'roles.manage')
    await db.transaction().execute(async (trx) => {
      if (await queries.roleHasUsers(trx, actor.tenantId, id))
        throw conflict('role_in_use', 'Users still hold this role')
      const deleted = await queries.deleteRole(trx, actor.tenantId, id)
      if (!deleted) throw notFound('Role')
      await recordDomainEvent(trx, roleEvent(actor, 'role.deleted', id))
    })
  }

  return { listRoles, getRole, createRole, updateRole, deleteRole }
}
