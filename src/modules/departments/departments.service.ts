import type { AppDeps } from '../../platform/app-module.js'
import { diff } from '../audit/index.js'
import { actingUserId, type Actor } from '../../platform/auth/actor.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { FieldErrorCollector, notFound } from '../../platform/http/errors.js'
import type { RawListQuery } from '../../platform/query/parse-query.js'
import { listResource, showResource } from '../../platform/query/run-query.js'
import type { Db } from '../../platform/db/schema.js'
import { recordDomainEvent, recordDomainEvents } from '../../platform/events/domain-events.js'
import { recordSyncWrites } from '../../platform/sync/change-log.js'
import { isUsableFolder } from '../folders/index.js'
import { notificationSettingExists } from '../notifications/index.js'
import * as queries from './departments.queries.js'
import { departmentResource } from './departments.resource.js'
import type { CreateDepartmentBody, UpdateDepartmentBody } from './departments.schemas.js'

export type DepartmentsService = ReturnType<typeof createDepartmentsService>
/** What only a SCIM client sets on a department: the identity provider's id of the group. */
export interface DepartmentExtras {
  external_id?: string | null
}

/** A department's event (audited, and delivered to the automations listening): `data` names the changed fields only. */
const departmentEvent = (actor: Actor, type: string, id: number) => ({
  type,
  tenantId: actor.tenantId,
  actorId: actingUserId(actor),
  subjectType: 'department',
  subjectId: id,
})

export function createDepartmentsService({ db }: AppDeps) {
  const ctx = (actor: Actor) => ({ db, tenantId: actor.tenantId, actor })

  async function checkReferences(trx: Db, actor: Actor, body: UpdateDepartmentBody): Promise<void> {
    const { tenantId } = actor
    const problems = new FieldErrorCollector()
    const missing = await queries.missingUserIds(trx, tenantId, body.user_ids ?? [])
    if (missing.length > 0) problems.add('user_ids', `unknown user ids: ${missing.join(', ')}`)
    if (
      body.notification_setting_id &&
      !(await notificationSettingExists(trx, tenantId, body.notification_setting_id))
    ) {
      problems.add('notification_setting_id', 'does not exist')
    }
    if (typeof body.folder_id === 'number' && !(await isUsableFolder(trx, actor, 'department', body.folder_id)))
      problems.add('folder_id', 'no such department folder')
    problems.throwIfAny()
  }

  /** Users who joined or left a department see what its grants give them appear or go (issue 43). */
  async function recordMembershipChanges(trx: Db, tenantId: number, userIds: number[]) {
    await recordSyncWrites(trx, tenantId, { access: userIds.map((id) => ({ scope: 'user' as const, id })) })
  }

  /** Lists the tenant's departments with their member ids. */
  async function listDepartments(actor: Actor, query: RawListQuery) {
    requirePermission(actor, 'departments.view')
    return listResource(ctx(actor), departmentResource, queries.selectDepartments(db, actor.tenantId), query)
  }

  /** Shows one department with its member ids. */
  async function getDepartment(actor: Actor, id: number, query: RawListQuery = {}, trx: Db = db) {
    requirePermission(actor, 'departments.view')
    return showResource(
      { db: trx, tenantId: actor.tenantId, actor },
      departmentResource,
      queries.selectDepartments(trx, actor.tenantId).where('d.id', '=', id),
      query,
      'Department',
    )
  }

  /** Creates a department, optionally with members. */
  async function createDepartment(actor: Actor, body: CreateDepartmentBody, extras: DepartmentExtras = {}) {
    requirePermission(actor, 'departments.manage')
    return db.transaction().execute(async (trx) => {
      await checkReferences(trx, actor, body)
      const { id } = await queries.insertDepartment(trx, actor.tenantId, { ...body, ...extras })
      if (body.user_ids) await queries.replaceMembers(trx, actor.tenantId, id, body.user_ids)
      await recordMembershipChanges(trx, actor.tenantId, body.user_ids ?? [])
      const changes = diff(undefined, { ...body, ...extras })
      await recordDomainEvent(trx, {
        ...departmentEvent(actor, 'department.created', id),
        data: { changed: Object.keys(changes) },
        audit: changes,
      })
      return getDepartment({ ...actor, permissions: new Set(['*']) }, id, {}, trx)
    })
  }

  /** Updates a department; a sent `user_ids` replaces the membership. */
  async function updateDepartment(actor: Actor, id: number, body: UpdateDepartmentBody, extras: DepartmentExtras = {}) {
    requirePermission(actor, 'departments.manage')
    return db.transaction().execute(async (trx) => {
      const { user_ids: userIds, ...sent } = body
      const fields = { ...sent, ...extras }
      // the stored row and members, locked, as the audit records' "before"
      const before = await queries.findDepartmentForUpdate(trx, actor.tenantId, id)
      const membersBefore = userIds ? await queries.memberIds(trx, actor.tenantId, id) : []
      const updated = await queries.updateDepartment(trx, actor.tenantId, id, fields)
      if (!updated) throw notFound('Department')
      await checkReferences(trx, actor, body)
      if (userIds) {
        await queries.replaceMembers(trx, actor.tenantId, id, userIds)
        const after = new Set(userIds)
        const moved = [
          ...membersBefore.filter((u) => !after.has(u)),
          ...[...after].filter((u) => !membersBefore.includes(u)),
        ]
        await recordMembershipChanges(trx, actor.tenantId, moved)
      }
      const changes = diff(before, fields)
      const members = [...new Set(userIds ?? [])].sort((a, b) => a - b)
      await recordDomainEvents(trx, [
        {
          ...departmentEvent(actor, 'department.updated', id),
          data: { changed: Object.keys(changes) },
          audit: changes,
        },
        ...(userIds
          ? [
              {
                ...departmentEvent(actor, 'department.membersReplaced', id),
                data: { user_ids: members },
                audit: diff({ user_ids: membersBefore }, { user_ids: members }),
              },
            ]
          : []),
      ])
      return getDepartment({ ...actor, permissions: new Set(['*']) }, id, {}, trx)
    })
  }

  /** Deletes a department (memberships go with it). */
  async function deleteDepartment(actor: Actor, id: number) {
    requirePermission(actor, 'departments.manage')
    await db.transaction().execute(async (trx) => {
      const members = await queries.memberIds(trx, actor.tenantId, id)
      const deleted = await queries.deleteDepartment(trx, actor.tenantId, id)
      if (!deleted) throw notFound('Department')
      await recordMembershipChanges(trx, actor.tenantId, members)
      await recordDomainEvent(trx, departmentEvent(actor, 'department.deleted', id))
    })
  }

  return { listDepartments, getDepartment, createDepartment, updateDepartment, deleteDepartment }
}
