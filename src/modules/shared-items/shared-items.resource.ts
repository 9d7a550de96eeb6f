import { type Expression, sql, type SqlBool } from 'kysely'
import { invalidField } from '../../platform/http/errors.js'
import { defineResource, type QueryContext } from '../../platform/query/resource.js'
import { loadBasicUsers, loadEntityPermissionsOfTargets, lookupTarget } from '../entity-permissions/index.js'
import { lookupShareTarget, parseShareTargetId, type ShareTargetId } from './share-targets.js'
import { groupBy } from '../../platform/group-by.js'

/** A stored (text) target id as the API shows it: a number for integer targets, the string otherwise. */
export function presentTargetableId(alias: string, stored: string): ShareTargetId {
  const def = lookupShareTarget(alias)
  const idType = def?.idType ?? (/^\d{1,15}$/.test(stored) ? 'integer' : 'uuid')
  return idType === 'integer' ? Number(stored) : stored
}

export const stableUrl = (baseUrl: string | undefined, id: string) => `${baseUrl ?? ''}/shared/${id}`

/** Target fields keyed by `alias:id` (batched per alias). */
async function loadTargetables(ctx: QueryContext, refs: string[]): Promise<Map<unknown, unknown>> {
  const byAlias = groupBy(
    refs,
    (ref) => ref.slice(0, ref.indexOf(':')),
    (ref) => ref.slice(ref.indexOf(':') + 1),
  )
  const out = new Map<unknown, unknown>()
  for (const [alias, stored] of byAlias) {
    const def = lookupShareTarget(alias)
    if (!def) continue
    const ids = stored
      .map((id) => parseShareTargetId(def.idType, id))
      .filter((id): id is ShareTargetId => id !== undefined)
    if (ids.length === 0) continue
    const grantTarget = lookupTarget(alias)
    // the target's own fields; else its grant target's basic fields; else just its id
    const loaded = def.loadFields
      ? await def.loadFields(ctx.db, ctx.tenantId, ids)
      : 'target' in grantTarget
        ? await grantTarget.target.loadBasic(ctx.db, ctx.tenantId, ids)
        : new Map(ids.map((id) => [String(id), { id }]))
    for (const [id, fields] of loaded) out.set(`${alias}:${id}`, fields)
  }
  return out
}

/** A shared item's fields and relations (contract 30). Default relations: none. */
/** The columns the computed fields and the relations read. */
type SharedItemResourceRow = {
  id: string
  user_id: number
  targetable_type: string
  targetable_id_stored: string
  targetable_ref: string
}

export const sharedItemResource = defineResource<SharedItemResourceRow>({
  name: 'sharedItem',
  alias: 'si',
  uniqueKey: 'id',
  defaultSort: ['id'],
  fields: {
    id: { type: 'uuid' },
    user_id: { type: 'id' },
    type: { type: 'string' },
    redirect_type: { type: 'string' },
    targetable_type: { type: 'string' },
    targetable_id_stored: { type: 'string', sql: sql`si.targetable_id`, internal: true },
    targetable_id: {
      type: 'string',
      compute: (row) => presentTargetableId(row.targetable_type, row.targetable_id_stored),
      requires: ['targetable_type', 'targetable_id_stored'],
      byDefault: true,
    },
    targetable_ref: { type: 'string', sql: sql`si.targetable_type || ':' || si.targetable_id`, internal: true },
    config: { type: 'json' },
    url: { type: 'string', compute: (row, ctx) => stableUrl(ctx.baseUrl, row.id), requires: ['id'], byDefault: true },
    created_at: { type: 'timestamp' },
    updated_at: { type: 'timestamp' },
    deleted_at: { type: 'timestamp' },
  },
  customFilters: {
    // targetable_id is presented per target type but stored as text: compare as text
    targetable_id: (value) => {
      if (typeof value !== 'string' || value.length > 64)
        throw invalidField('filter.targetable_id', 'supports equality with one id only')
      return sql<boolean>`si.targetable_id = ${value.toLowerCase()}` as Expression<SqlBool>
    },
  },
  relations: {
    user: {
      key: 'user_id',
      many: false,
      load: (ctx, ids) => loadBasicUsers(ctx, ids),
    },
    targetable: { key: 'targetable_ref', many: false, load: (ctx, refs) => loadTargetables(ctx, refs) },
    entityPermissions: {
      key: 'id',
      many: true,
      load: (ctx, ids) => loadEntityPermissionsOfTargets(ctx.db, ctx.tenantId, 'sharedItem', ids),
    },
  },
})

/** The administration's view of a shared item: its fields plus how often and when it was last opened. */
export const administeredSharedItemResource = defineResource({
  ...sharedItemResource,
  fields: {
    ...sharedItemResource.fields,
    access_count: {
      type: 'integer',
      filterable: false,
      sortable: false,
      sql: (tenantId: number) =>
        sql`(select count(*)::int from shared_item_accesses sa where sa.tenant_id = ${tenantId} and sa.shared_item_id = si.id::text)`,
    },
    last_accessed_at: {
      type: 'timestamp',
      filterable: false,
      sortable: false,
      sql: (tenantId: number) =>
        sql`(select max(sa.created_at) from shared_item_accesses sa where sa.tenant_id = ${tenantId} and sa.shared_item_id = si.id::text)`,
    },
  },
})
