import { type Selectable, sql } from 'kysely'
import type { FoldersTable } from '../../platform/db/schema.js'
import { applySelects, presentRows } from '../../platform/query/apply-query.js'
import type { ParsedQuery } from '../../platform/query/parse-query.js'
import { defineResource, type QueryContext, type ResourceDef } from '../../platform/query/resource.js'
import { loadBasicUsers, loadEntityPermissionsOfTargets } from '../entity-permissions/index.js'
import * as queries from './folders.queries.js'
import { folderVisibleSql } from './folders-visibility.queries.js'
import { groupBy } from '../../platform/group-by.js'

const FOLDER_FIELDS = [
  'id',
  'type',
  'parent_id',
  'lang_id',
  'name',
  'icon_id',
  'show_on_menu',
  'user_id',
  'created_at',
  'updated_at',
]
const plainFolders: ParsedQuery = {
  selects: FOLDER_FIELDS,
  relations: [],
  filters: [],
  customFilters: [],
  sort: [{ field: 'id', desc: false }],
}

/** Visible folders matching `where`, presented with their default fields (parent / children relations). */
async function loadVisibleFolders(
  ctx: QueryContext,
  column: 'id' | 'parent_id',
  keys: number[],
): Promise<Record<string, unknown>[]> {
  const resource = folderResource(ctx.actor?.langId ?? null)
  let base = queries.selectFolders(ctx.db, ctx.tenantId).where(`f.${column}`, 'in', keys)
  if (ctx.actor) base = base.where(folderVisibleSql(ctx.actor, 'f'))
  const rows = (await applySelects(base, resource, plainFolders, ctx.tenantId).orderBy('f.id').execute()) as Record<
    string,
    unknown
  >[]
  return presentRows(resource, plainFolders, rows, ctx)
}

const cache = new Map<string, ResourceDef>()

/** The columns the relations read. */
type FolderResourceRow = Pick<Selectable<FoldersTable>, 'id' | 'parent_id' | 'user_id'>

/**
 * A folder's fields and relations. `name` is resolved in SQL: the translation in the requester's
 * language, else the folder's primary language, else the first by language id (contract 20); so the
 * resource is built per requesting language (and cached).
 */
export function folderResource(langId: string | null): ResourceDef {
  const cacheKey = langId ?? ''
  const cached = cache.get(cacheKey)
  if (cached) return cached
  const resource = defineResource<FolderResourceRow>({
    name: 'folder',
    alias: 'f',
    uniqueKey: 'id',
    defaultSort: ['id'],
    fields: {
      id: { type: 'id' },
      type: { type: 'string' },
      parent_id: { type: 'id' },
      lang_id: { type: 'string' },
      name: {
        type: 'string',
        sql: (
          tenantId: number,
        ) => sql`(select t.name from folder_translations t where t.tenant_id = ${tenantId} and t.folder_id = f.id
          order by coalesce(t.lang_id = ${langId}::text, false) desc, (t.lang_id = f.lang_id) desc, t.lang_id limit 1)`,
      },
      icon_id: { type: 'id' },
      show_on_menu: { type: 'boolean' },
      user_id: { type: 'id' },
      created_at: { type: 'timestamp' },
      updated_at: { type: 'timestamp' },
    },
    relations: {
      parent: {
        key: 'parent_id',
        many: false,
        load: async (ctx, ids) => new Map((await loadVisibleFolders(ctx, 'id', ids)).map((f) => [f.id, f])),
      },
      children: {
        key: 'id',
        many: true,
        load: async (ctx, ids) => groupBy(await loadVisibleFolders(ctx, 'parent_id', ids), (f) => f.parent_id),
      },
      translations: {
        key: 'id',
        many: true,
        load: async (ctx, ids) => {
          const rows = await queries.selectTranslations(ctx.db, ctx.tenantId, ids)
          return groupBy(
            rows,
            (r) => r.folder_id,
            ({ lang_id, name }) => ({ lang_id, name }),
          )
        },
      },
      entityPermissions: {
        key: 'id',
        many: true,
        load: (ctx, ids) => loadEntityPermissionsOfTargets(ctx.db, ctx.tenantId, 'folder', ids),
      },
      user: {
        key: 'user_id',
        many: false,
        load: (ctx, ids) => loadBasicUsers(ctx, ids),
      },
    },
  })
  cache.set(cacheKey, resource)
  return resource
}
