import { sql } from 'kysely'
import { applySelects, presentRows } from '../../platform/query/apply-query.js'
import type { ParsedQuery } from '../../platform/query/parse-query.js'
import { defineResource, type QueryContext } from '../../platform/query/resource.js'
import { BASIC_USER_FIELDS, userResource } from '../users/index.js'
import * as queries from './entity-permissions.queries.js'
import { presentTargetId, registeredTarget, type TargetId } from './targets.js'
import { groupBy } from '../../platform/group-by.js'

const basicUserQuery: ParsedQuery = {
  selects: [...BASIC_USER_FIELDS],
  relations: [],
  filters: [],
  customFilters: [],
  sort: [],
}

/** Basic user objects keyed by id (batched; deleted users included: a grant may still name them). */
export async function loadBasicUsers(ctx: QueryContext, ids: number[]): Promise<Map<number, Record<string, unknown>>> {
  if (ids.length === 0) return new Map()
  const base = ctx.db.selectFrom('users as u').where('u.tenant_id', '=', ctx.tenantId).where('u.id', 'in', ids)
  const rows = await applySelects(base, userResource, basicUserQuery, ctx.tenantId).execute()
  const presented = await presentRows(userResource, basicUserQuery, rows, ctx)
  return new Map(presented.map((user) => [Number(user.id), user]))
}

function splitRef(ref: string): [string, string] {
  const at = ref.indexOf(':')
  return [ref.slice(0, at), ref.slice(at + 1)]
}

async function loadPrincipals(ctx: QueryContext, refs: string[]): Promise<Map<unknown, unknown>> {
  const byEntity: Record<string, number[]> = { user: [], role: [], department: [] }
  for (const ref of refs) {
    const [entity, id] = splitRef(ref)
    byEntity[entity]?.push(Number(id))
  }
  const out = new Map<unknown, unknown>()
  for (const [id, user] of await loadBasicUsers(ctx, byEntity.user)) out.set(`user:${id}`, user)
  if (byEntity.role.length > 0) {
    for (const role of await queries.selectBasicRoles(ctx.db, ctx.tenantId, byEntity.role))
      out.set(`role:${role.id}`, role)
  }
  if (byEntity.department.length > 0) {
    for (const department of await queries.selectBasicDepartments(ctx.db, ctx.tenantId, byEntity.department))
      out.set(`department:${department.id}`, department)
  }
  return out
}

async function loadTargets(ctx: QueryContext, refs: string[]): Promise<Map<unknown, unknown>> {
  const byAlias = groupBy(
    refs.map(splitRef).filter(([alias]) => registeredTarget(alias)),
    ([alias]) => alias,
    ([alias, id]): TargetId => presentTargetId(alias, id),
  )
  const out = new Map<unknown, unknown>()
  for (const [alias, ids] of byAlias) {
    const loaded = await registeredTarget(alias)!.loadBasic(ctx.db, ctx.tenantId, ids)
    for (const [id, target] of loaded) out.set(`${alias}:${id}`, target)
  }
  return out
}

/** A grant's fields and relations (contract 20). */
/** The columns the computed fields and the relations read. */
type GrantResourceRow = { target_entity: string; target_entity_raw: string; principal_ref: string; target_ref: string }

export const entityPermissionResource = defineResource<GrantResourceRow>({
  name: 'entityPermission',
  alias: 'ep',
  uniqueKey: 'id',
  defaultSort: ['id'],
  fields: {
    id: { type: 'id' },
    key: { type: 'string' },
    permission_entity: { type: 'string' },
    permission_entity_id: { type: 'id' },
    target_entity: { type: 'string' },
    // stored as text (shared items have uuid ids); shown as the target kind's own id type
    target_entity_id: {
      type: 'string',
      byDefault: true,
      requires: ['target_entity', 'target_entity_raw'],
      compute: (row) => presentTargetId(row.target_entity, row.target_entity_raw),
    },
    created_at: { type: 'timestamp' },
    updated_at: { type: 'timestamp' },
    target_entity_raw: { type: 'string', internal: true, sql: sql`ep.target_entity_id` },
    principal_ref: { type: 'string', internal: true, sql: sql`ep.permission_entity || ':' || ep.permission_entity_id` },
    target_ref: { type: 'string', internal: true, sql: sql`ep.target_entity || ':' || ep.target_entity_id` },
  },
  relations: {
    permissionEntity: { key: 'principal_ref', many: false, load: (ctx, refs) => loadPrincipals(ctx, refs) },
    targetEntity: { key: 'target_ref', many: false, load: (ctx, refs) => loadTargets(ctx, refs) },
  },
})

/** A grant row as the API shows it (default fields, no relations). */
export function presentGrant(row: queries.GrantRow) {
  return { ...row, target_entity_id: presentTargetId(row.target_entity, row.target_entity_id) }
}
