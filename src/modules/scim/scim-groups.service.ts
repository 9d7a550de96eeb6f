import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { createDepartmentsService } from '../departments/index.js'
import { project, projects } from './scim.attributes.js'
import { ScimError } from './scim.errors.js'
import { applyPatch, standardOperations, type PatchRules } from './scim.patch.js'
import { checkIfMatch, listPage, listResponse, meta, parseId, type Meta } from './scim.resources.js'
import {
  CORE_GROUP,
  type PatchOpBody,
  type ScimGroupInput,
  type ScimListQuery,
  type ScimShowQuery,
} from './scim.schemas.js'
import * as queries from './scim-groups.queries.js'

const SORTABLE: Record<string, string> = {
  id: 'd.id',
  displayname: 'd.name',
  externalid: 'd.external_id',
  'meta.created': 'd.created_at',
  'meta.lastmodified': 'd.updated_at',
}

const PATCH_RULES: PatchRules = {
  attributes: {
    id: 'id',
    meta: 'meta',
    displayname: 'displayName',
    externalid: 'externalId',
    members: 'members',
    'members.value': 'value',
    'members.display': 'display',
    'members.type': 'type',
    'members.$ref': '$ref',
  },
  readOnly: new Set(['id', 'meta']),
  booleans: new Set(),
  schemas: [CORE_GROUP],
}

interface Member {
  value: string
  display?: string
  type?: string
  $ref?: string
}

export interface ScimGroup {
  schemas: string[]
  id: string
  externalId?: string
  displayName: string
  members?: Member[]
  meta: Meta
}

type GroupRow = {
  id: number
  name: string
  external_id: string | null
  created_at: string
  updated_at: string
  version: string
}

/** Member values → user ids (400 `invalidValue` for a value that is no id; unknown users are refused by the service). */
function memberIds(members: unknown): number[] {
  if (members === undefined || members === null) return []
  if (!Array.isArray(members)) throw new ScimError(400, 'members must be an array', 'invalidValue')
  const ids = members.map((m: unknown) => {
    const value = m && typeof m === 'object' && 'value' in m ? m.value : undefined
    const text = typeof value === 'number' ? String(value) : value
    if (typeof text !== 'string' || !/^[1-9][0-9]{0,15}$/.test(text))
      throw new ScimError(400, `members value ${JSON.stringify(value)} is no user id`, 'invalidValue')
    return Number(text)
  })
  return [...new Set(ids)]
}

/** Member objects reduced to their value (as strings), the form the stored members are compared in. */
function memberValues(value: unknown): unknown {
  const one = (m: unknown) =>
    m && typeof m === 'object' && 'value' in m && (typeof m.value === 'string' || typeof m.value === 'number')
      ? { value: String(m.value) }
      : m
  return Array.isArray(value) ? value.map(one) : one(value)
}

export function createScimGroupsService(deps: AppDeps) {
  const { db } = deps
  const departments = createDepartmentsService(deps)
  const base = `${deps.config.baseUrl}/scim/v2`

  /** The members of some departments (display: the user's name), in one statement. */
  async function membersOf(tenantId: number, ids: number[], withDisplay: boolean): Promise<Map<number, Member[]>> {
    const byGroup = new Map<number, Member[]>()
    if (ids.length === 0) return byGroup
    const rows = await queries.membersOfGroups(db, tenantId, ids)
    for (const row of rows) {
      const list = byGroup.get(row.department_id) ?? []
      const member: Member = { value: String(row.user_id) }
      if (withDisplay) {
        member.display = `${row.first_name} ${row.last_name}`.trim() || row.username
        member.type = 'User'
        member.$ref = `${base}/Users/${row.user_id}`
      }
      list.push(member)
      byGroup.set(row.department_id, list)
    }
    return byGroup
  }

  function present(row: GroupRow, members?: Member[]): ScimGroup {
    const group: ScimGroup = {
      schemas: [CORE_GROUP],
      id: String(row.id),
      displayName: row.name,
      meta: meta('Group', base, 'Groups', row),
    }
    if (row.external_id !== null) group.externalId = row.external_id
    if (members) group.members = members
    return group
  }

  async function load(actor: Actor, id: number, members: 'none' | 'ids' | 'full'): Promise<ScimGroup> {
    const row: GroupRow | undefined = await queries.findGroup(db, actor.tenantId, id)
    if (!row) throw new ScimError(404, `Group ${id} not found`)
    if (members === 'none') return present(row)
    return present(row, (await membersOf(actor.tenantId, [id], members === 'full')).get(id) ?? [])
  }

  /** GET /Groups (Entra ID asks with excludedAttributes=members: then no member is read). */
  async function listGroups(actor: Actor, query: ScimListQuery) {
    const filter = query.filter ? queries.groupsFilter(actor.tenantId, query.filter) : undefined
    const listed = listPage(query, SORTABLE, CORE_GROUP)
    const { total, rows } = await queries.scimGroupsPage(db, actor.tenantId, filter, listed)
    const members = projects(query, 'members', CORE_GROUP)
      ? await membersOf(
          actor.tenantId,
          rows.map((r) => r.id),
          true,
        )
      : undefined
    const resources = rows.map((row) =>
      project({ ...present(row, members ? (members.get(row.id) ?? []) : undefined) }, query, CORE_GROUP),
    )
    return listResponse(resources, total, listed.startIndex)
  }

  /** GET /Groups/{id}. */
  async function getGroup(actor: Actor, rawId: string, query: ScimShowQuery) {
    const group = await load(actor, parseId(rawId, 'Group'), projects(query, 'members', CORE_GROUP) ? 'full' : 'none')
    return { resource: project({ ...group }, query, CORE_GROUP), etag: group.meta.version }
  }

  /** POST /Groups: a department with its members, through the departments service (audit records). */
  async function createGroup(actor: Actor, input: ScimGroupInput) {
    const ids = memberIds(input.members)
    const created = await departments.createDepartment(
      actor,
      { name: input.displayName, ...(ids.length > 0 ? { user_ids: ids } : {}) },
      { external_id: input.externalId ?? null },
    )
    const group = await load(actor, Number(created.id), 'full')
    return { resource: group, etag: group.meta.version, location: group.meta.location }
  }

  /** Writes what differs from the stored group: its name, externalId and the whole member set (set-based). */
  async function update(
    actor: Actor,
    current: ScimGroup,
    next: { name: string; externalId: string | null; members?: number[] },
  ) {
    const id = Number(current.id)
    const before = (current.members ?? []).map((m) => Number(m.value)).sort((a, b) => a - b)
    const after = next.members ? [...next.members].sort((a, b) => a - b) : undefined
    const membersChanged =
      after !== undefined && (after.length !== before.length || after.some((v, i) => v !== before[i]))
    const body = {
      ...(next.name !== current.displayName ? { name: next.name } : {}),
      ...(membersChanged ? { user_ids: after } : {}),
    }
    const externalChanged = next.externalId !== (current.externalId ?? null)
    if (Object.keys(body).length > 0 || externalChanged)
      await departments.updateDepartment(actor, id, body, externalChanged ? { external_id: next.externalId } : {})
    const group = await load(actor, id, 'full')
    return { resource: group, etag: group.meta.version }
  }

  /** PUT /Groups/{id}: name, externalId and members as sent. */
  async function replaceGroup(actor: Actor, rawId: string, input: ScimGroupInput, ifMatch?: string) {
    const current = await load(actor, parseId(rawId, 'Group'), 'ids')
    checkIfMatch(ifMatch, current.meta.version)
    if (input.id !== undefined && input.id !== current.id)
      throw new ScimError(400, 'id is read-only and differs from the path', 'mutability')
    return update(actor, current, {
      name: input.displayName,
      externalId: input.externalId ?? null,
      members: memberIds(input.members),
    })
  }

  /** PATCH /Groups/{id}: members added or removed one by one (`members[value eq "…"]`), or the name. */
  async function patchGroup(actor: Actor, rawId: string, body: PatchOpBody, ifMatch?: string) {
    const current = await load(actor, parseId(rawId, 'Group'), 'ids')
    checkIfMatch(ifMatch, current.meta.version)
    // members compare by value alone: Entra ID sends {"$ref": null, "value": "…"}, Okta adds "display"
    const ops = standardOperations(body, PATCH_RULES, current.id).map((o) =>
      o.path?.toLowerCase() === 'members' && o.value !== undefined ? { ...o, value: memberValues(o.value) } : o,
    )
    const touchesMembers = ops.some((o) => o.path?.toLowerCase().startsWith('members'))
    const patched = applyPatch(
      {
        ...current,
        meta: {
          ...current.meta,
          created: new Date(current.meta.created),
          lastModified: new Date(current.meta.lastModified),
        },
      },
      ops,
    )
    const record: Record<string, unknown> = { ...patched }
    const name = record.displayName
    if (typeof name !== 'string' || name.trim() === '' || name.length > 255)
      throw new ScimError(400, 'displayName must be a string of 1–255 characters', 'invalidValue')
    const externalId = record.externalId
    if (externalId !== undefined && externalId !== null && typeof externalId !== 'string')
      throw new ScimError(400, 'externalId must be a string', 'invalidValue')
    return update(actor, current, {
      name,
      externalId: externalId ?? null,
      ...(touchesMembers ? { members: memberIds(record.members) } : {}),
    })
  }

  /** DELETE /Groups/{id}: the department and its memberships. */
  async function deleteGroup(actor: Actor, rawId: string, ifMatch?: string): Promise<void> {
    const current = await load(actor, parseId(rawId, 'Group'), 'none')
    checkIfMatch(ifMatch, current.meta.version)
    await departments.deleteDepartment(actor, Number(current.id))
  }

  return { listGroups, getGroup, createGroup, replaceGroup, patchGroup, deleteGroup }
}
export type ScimGroupsService = ReturnType<typeof createScimGroupsService>
