import type { Readable } from 'node:stream'
import type { SelectQueryBuilder } from 'kysely'
import { notFound } from '../http/errors.js'
import { shapedStatement } from '../db/statement-shapes.js'
import { applyListQuery, applySelects, presentRows, storedFieldsFor, streamJsonArray } from './apply-query.js'
import { parseListQuery, parseShowQuery, type ParsedQuery, type RawListQuery } from './parse-query.js'
import type { QueryContext, ResourceDef } from './resource.js'

type AnySelect = SelectQueryBuilder<any, any, any>

/**
 * Runs a list request: validates the query keys, applies them in SQL to `base` (already scoped to the
 * tenant and access rule), and returns the page — or a cursor-backed stream when no `limit` was given.
 */
export async function listResource(
  ctx: QueryContext,
  resource: ResourceDef,
  base: AnySelect,
  raw: RawListQuery,
): Promise<Readable | Record<string, unknown>[]> {
  const parsed = parseListQuery(resource, raw, ctx)
  const query = applyListQuery(base, resource, parsed, ctx)
  const present = (rows: Record<string, unknown>[]) => presentRows(resource, parsed, rows, ctx)
  if (parsed.limit === undefined) return streamJsonArray(query, present)
  return present((await query.execute()) as Record<string, unknown>[])
}

/** Runs a single read with `selects`/`relations`; 404 when `base` finds nothing. */
export async function showResource(
  ctx: QueryContext,
  resource: ResourceDef,
  base: AnySelect | ShapedBase<any>,
  raw: RawListQuery,
  label = 'Resource',
): Promise<Record<string, unknown>> {
  const item = await findResource(ctx, resource, base, raw)
  if (!item) throw notFound(label)
  return item
}

/**
 * The base of a single read built once per shape (`shapedStatement`): `build` makes it from `values`
 * (plus the tenant id) and must be one function for the life of the process; `key` names every decision
 * it takes besides the values. The selected fields are added to the key here.
 */
export interface ShapedBase<V extends Record<string, unknown>> {
  build: (values: V & { tenantId: number }) => AnySelect
  values: V
  key: string
}

type ShowStatement = ReturnType<typeof shapedShowStatement>
const shapedShows = new WeakMap<object, ShowStatement>()
const shapedShowStatement = (build: ShapedBase<any>['build']) =>
  shapedStatement((values: Record<string, unknown> & { tenantId: number }, resource: ResourceDef, parsed: ParsedQuery) => applySelects(build(values), resource, parsed, values.tenantId))

function selectRows(ctx: QueryContext, resource: ResourceDef, base: AnySelect | ShapedBase<any>, parsed: ParsedQuery): Promise<unknown[]> {
  if (!('build' in base)) return applySelects(base, resource, parsed, ctx.tenantId).execute()
  let statement = shapedShows.get(base.build)
  if (!statement) shapedShows.set(base.build, (statement = shapedShowStatement(base.build)))
  const compiled = statement(`${base.key} ${storedFieldsFor(resource, parsed).join(',')}`, { ...base.values, tenantId: ctx.tenantId }, resource, parsed)
  return ctx.db.executeQuery(compiled).then((result) => result.rows)
}

/** `showResource` for a row that may not exist: undefined instead of a 404. */
export async function findResource(
  ctx: QueryContext,
  resource: ResourceDef,
  base: AnySelect | ShapedBase<any>,
  raw: RawListQuery,
): Promise<Record<string, unknown> | undefined> {
  const parsed = parseShowQuery(resource, raw, ctx)
  const [row] = await selectRows(ctx, resource, base, parsed)
  if (!row) return undefined
  const [item] = await presentRows(resource, parsed, [row as Record<string, unknown>], ctx)
  return item
}
