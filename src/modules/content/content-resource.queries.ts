import { type Kysely, type RawBuilder, type SelectQueryBuilder, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import type { FieldDef } from '../../platform/query/resource.js'
import { type ContentRow, contentRow, type Principal } from './content-declaration.js'

// The statements of the content engine (content-resource.ts, the share target and the sync source) on
// the content table a declaration names. Each takes the table and, where it asks who may view, a condition
// the engine builds for the record under the alias the statement gives it (`visible`: the content rule,
// content-access.queries.ts, for an actor or a user set).

/** The content tables as Kysely sees them: a declaration names its table at run time, its rows are content rows. */
type ContentTables = Record<string, Record<string, unknown>>
// eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- Kysely types tables by name; these are named at run time
const tables = (db: Db) => db as unknown as Kysely<ContentTables>

const contentRowOrUndefined = (row: Record<string, unknown> | undefined) => (row ? contentRow(row) : undefined)

/** Binds JSON fields for a jsonb column; everything else as is (only the declaration's fields are columns). */
function columnValues(fields: Record<string, FieldDef>, values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(values)) {
    if (!(key in fields)) continue
    out[key] = fields[key].type === 'json' && value !== null ? JSON.stringify(value) : value
  }
  return out
}

/** SQL: a condition on the record under `alias` (the content rule for an actor or a user set). */
export type RecordCondition = (alias: string) => RawBuilder<boolean>

/** Records of the tenant for which `visible` holds, as a query builder under alias `c` (the resource's alias). */
export function selectVisibleContent(db: Db, table: string, tenantId: number, visible: RecordCondition) {
  return tables(db).selectFrom(`${table} as c`).where('c.tenant_id', '=', tenantId).where(visible('c'))
}

export type VisibleContentQuery = ReturnType<typeof selectVisibleContent>

/** A list's base: the visible records with each `scope` column (a parent's) pinned to its value. */
export function selectVisibleContentInScope(
  db: Db,
  table: string,
  tenantId: number,
  visible: RecordCondition,
  scope: Record<string, unknown>,
): VisibleContentQuery {
  let base = selectVisibleContent(db, table, tenantId, visible)
  for (const [column, value] of Object.entries(scope)) base = base.where(`c.${column}`, '=', value)
  return base
}

/** The visible record `id`, as a query builder under alias `c` (show). */
export const selectVisibleContentById = (
  db: Db,
  table: string,
  tenantId: number,
  id: number,
  visible: RecordCondition,
) => selectVisibleContent(db, table, tenantId, visible).where('c.id', '=', id)

/** The record `id` whoever asks, as a query builder under alias `c` (show through a verified grant token). */
export const selectContentById = (db: Db, table: string, tenantId: number, id: number) =>
  tables(db).selectFrom(`${table} as c`).where('c.tenant_id', '=', tenantId).where('c.id', '=', id)

/** The stored row of record `id` if `visible` holds for it. */
export async function findVisibleContent(
  db: Db,
  table: string,
  tenantId: number,
  id: number,
  visible: RecordCondition,
): Promise<ContentRow | undefined> {
  return contentRowOrUndefined(
    await selectVisibleContent(db, table, tenantId, visible).selectAll('c').where('c.id', '=', id).executeTakeFirst(),
  )
}

/** SQL: the record `id` exists and `visible` holds for it (for a statement that writes only if so). */
export function visibleContentExistsSql(
  db: Db,
  table: string,
  tenantId: number,
  id: number,
  visible: RecordCondition,
): RawBuilder<boolean> {
  return sql<boolean>`exists (${selectVisibleContent(db, table, tenantId, visible)
    .select(sql`1`.as('one'))
    .where('c.id', '=', id)})`
}

export async function contentExists(db: Db, table: string, tenantId: number, id: number): Promise<boolean> {
  const { rows } = await sql`select 1 from ${sql.table(table)} where tenant_id = ${tenantId} and id = ${id}`.execute(db)
  return rows.length > 0
}

/** The stored row of record `id`, whoever asks. */
export async function findContent(
  db: Db,
  table: string,
  tenantId: number,
  id: number,
): Promise<ContentRow | undefined> {
  return contentRowOrUndefined(
    await tables(db)
      .selectFrom(table)
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .executeTakeFirst(),
  )
}

/** The stored row of record `id` and whether `visible` holds for it, in one statement; undefined when it does not exist. */
export async function findContentForViewer(
  db: Db,
  table: string,
  tenantId: number,
  id: number,
  visible: RecordCondition,
): Promise<{ row: ContentRow; visible: boolean } | undefined> {
  const found = await tables(db)
    .selectFrom(`${table} as c`)
    .selectAll('c')
    .select(visible('c').as('visible_to_actor'))
    .where('c.tenant_id', '=', tenantId)
    .where('c.id', '=', id)
    .executeTakeFirst()
  if (!found) return undefined
  const { visible_to_actor: isVisible, ...row } = found
  return { row: contentRow(row), visible: isVisible === true }
}

/**
 * Whether the parent record `parentId` (of `parentTable`, alias `cp`) lets the principal create under it:
 * an administrator, or the declaration's create `rule` holds for the parent.
 */
export async function parentAllowsCreate(
  db: Db,
  parentTable: string,
  tenantId: number,
  parentId: unknown,
  p: Principal,
  rule: (p: Principal, parentAlias: string) => RawBuilder<boolean>,
): Promise<boolean> {
  const { rows } = await sql`select 1 from ${sql.table(parentTable)} as cp where cp.tenant_id = ${tenantId}
      and cp.id = ${parentId} and (${p.isAdmin} or ${rule(p, 'cp')})`.execute(db)
  return rows.length > 0
}

/**
 * Inserts a record of the tenant authored by `userId`: the declared `fields` of `values` (bound) and the
 * `trusted` columns the server sets (e.g. file sizes).
 */
export async function insertContent(
  trx: Db,
  table: string,
  tenantId: number,
  userId: number,
  fields: Record<string, FieldDef>,
  values: Record<string, unknown>,
  trusted: Record<string, unknown>,
): Promise<ContentRow> {
  return contentRow(
    await tables(trx)
      .insertInto(table)
      .values({
        ...columnValues(fields, values),
        ...trusted,
        tenant_id: tenantId,
        user_id: userId,
      })
      .returningAll()
      .executeTakeFirstOrThrow(),
  )
}

/** Updates the declared `fields` of `values` of record `id` (and `updated_at`); undefined when it is gone. */
export async function updateContent(
  trx: Db,
  table: string,
  tenantId: number,
  id: number,
  fields: Record<string, FieldDef>,
  values: Record<string, unknown>,
): Promise<ContentRow | undefined> {
  return contentRowOrUndefined(
    await tables(trx)
      .updateTable(table)
      .set({ ...columnValues(fields, values), updated_at: sql`now()` })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst(),
  )
}

/** Deletes record `id`; its row, or undefined when it was gone. */
export async function deleteContent(
  trx: Db,
  table: string,
  tenantId: number,
  id: number,
): Promise<ContentRow | undefined> {
  return contentRowOrUndefined(
    await tables(trx)
      .deleteFrom(table)
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst(),
  )
}

function deleteGrants(trx: Db, alias: string, tenantId: number, ids: RawBuilder<unknown>) {
  return sql`delete from entity_permissions where tenant_id = ${tenantId} and target_entity = ${alias}
      and target_entity_id in (${ids})`.execute(trx)
}

/** Deletes the grants on record `id` of the content `alias`. */
export async function deleteGrantsOfRecord(trx: Db, alias: string, tenantId: number, id: number): Promise<void> {
  await deleteGrants(trx, alias, tenantId, sql`${String(id)}`)
}

/** Deletes the grants on the nested records (content `alias` in `table`) whose `parentColumn` is `parentId`. */
export async function deleteGrantsOfNested(
  trx: Db,
  alias: string,
  table: string,
  parentColumn: string,
  tenantId: number,
  parentId: number,
): Promise<void> {
  const column = sql.ref(parentColumn)
  await deleteGrants(
    trx,
    alias,
    tenantId,
    sql`select id::text from ${sql.table(table)} where tenant_id = ${tenantId} and ${column} = ${parentId}`,
  )
}

/** SQL: record `id` (alias `v`) exists and `viewedBy` holds for it (the scanned user row can view it). */
export const recordViewedBySql = (table: string, tenantId: number, id: number, viewedBy: RecordCondition) =>
  sql<boolean>`exists (
      select 1 from ${sql.table(table)} as v where v.tenant_id = ${tenantId} and v.id = ${id} and ${viewedBy('v')})`

/** The ids of the tenant's records (all, or those of `ids`) for which `visible` holds (a sync source's visible ids). */
export async function selectVisibleContentIds(
  db: Db,
  table: string,
  tenantId: number,
  ids: string[] | undefined,
  visible: RecordCondition,
): Promise<number[]> {
  const only = ids ? sql`and c.id = any(${ids.map(Number)}::bigint[])` : sql``
  const { rows } = await sql<{ id: number }>`select c.id from ${sql.table(table)} as c
        where c.tenant_id = ${tenantId} ${only} and ${visible('c')}`.execute(db)
  return rows.map((row) => row.id)
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- joins a content table named at run time: Kysely cannot type that join
export type AnySelect = SelectQueryBuilder<any, any, any>

/**
 * Left-joins record (as `t`) whose id is the text `idText` onto the caller's query, with all its
 * columns and whether `visible` holds for it (`visible_to_actor`).
 */
export function leftJoinContentTarget(
  query: AnySelect,
  table: string,
  tenantId: number,
  idText: RawBuilder<unknown>,
  visible: RecordCondition,
): AnySelect {
  // a stored text id that is no well-formed integer matches no record (as parseShareTargetId rejects it)
  const id = sql`case when ${idText} ~ '^[1-9][0-9]{0,15}$' then (${idText})::bigint end`
  return query
    .leftJoin(`${table} as t`, (join) => join.on('t.tenant_id', '=', tenantId).on('t.id', '=', id))
    .selectAll('t')
    .select(visible('t').as('visible_to_actor'))
}
