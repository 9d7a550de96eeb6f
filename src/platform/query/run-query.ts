import type { Readable } from 'node:stream'
import type { Compilable, CompiledQuery, SelectQueryBuilder } from 'kysely'
import { notFound } from '../http/errors.js'
import { shapedStatement, executeCompiled, streamCompiled } from '../db/database.js'
import {
  applyListQuery,
  applySelects,
  firstBatchOf,
  presentRows,
  shapeableFilters,
  streamJsonArray,
} from './apply-query.js'
import { parseListQuery, parseShowQuery, type ParsedQuery, type RawListQuery } from './parse-query.js'
import type { QueryContext, ResourceDef, ResourceRow, ShapeContext } from './resource.js'

/**
 * The base of a read built once per shape (`shapedStatement`): `build` makes it from `values` (plus the
 * tenant id) and must be one function for the life of the process; the shape is derived from the values
 * (and the read's resource and parsed query).
 */
export interface ShapedBase<V extends Record<string, unknown>, Q> {
  build: (values: V & { tenantId: number }) => Q
  values: V
}

/** What a read is applied to: a select (of any tables) scoped to the tenant, or a shaped base building one. */
type Base<DB, TB extends keyof DB, O, V extends Record<string, unknown>> =
  SelectQueryBuilder<DB, TB, O> | ShapedBase<V, SelectQueryBuilder<DB, TB, O>>
type ApplyRead = <DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  resource: ResourceDef,
  parsed: ParsedQuery,
  ctx: QueryContext,
) => Compilable<ResourceRow>
type ReadStatement<V> = (
  values: V & ShapeValues,
  resource: ResourceDef,
  parsed: ParsedQuery,
) => CompiledQuery<ResourceRow>

const applyPage: ApplyRead = applyListQuery
const applyShow: ApplyRead = (query, resource, parsed, ctx) => applySelects(query, resource, parsed, ctx.tenantId, ctx)
// per kind of read, base builder and resource (all three are decisions of the statement)
const readStatements = new Map<ApplyRead, WeakMap<object, WeakMap<ResourceDef, ReadStatement<never>>>>([
  [applyShow, new WeakMap()],
  [applyPage, new WeakMap()],
])

/** The query of `base` for this request (a shaped base built with its values). */
function built<DB, TB extends keyof DB, O, V extends Record<string, unknown>>(
  ctx: QueryContext,
  base: Base<DB, TB, O, V>,
): SelectQueryBuilder<DB, TB, O> {
  return 'build' in base ? base.build({ ...base.values, tenantId: ctx.tenantId }) : base
}

/** The shaped statement of one kind of read over one base builder and resource (all three decide its text). */
function readStatement<V extends Record<string, unknown>, DB, TB extends keyof DB, O>(
  apply: ApplyRead,
  build: ShapedBase<V, SelectQueryBuilder<DB, TB, O>>['build'],
  resource: ResourceDef,
): ReadStatement<V> {
  const byBuild = readStatements.get(apply)!
  let byResource = byBuild.get(build)
  if (!byResource) byBuild.set(build, (byResource = new WeakMap()))
  const known = byResource.get(resource)
  // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- stored under `build`: made below for its values
  if (known) return known as ReadStatement<V>
  const statement = shapedStatement((stood: V & ShapeValues, r: ResourceDef, p: ParsedQuery) =>
    // plain filters, word filters, the select list, inline relations and the sort read nothing of the
    // context but the tenant and the reader (readCompiled shapes no read with a filter of another kind)
    // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- see above: a ShapeContext is all of it read here
    apply(build(stood), r, p, shapeContext(stood) as QueryContext),
  )
  byResource.set(resource, statement)
  return statement
}

/** The statement reading `base` by `apply` (a single read's selects, a page's query): compiled once per shape when `base` is shaped and the parse has a shape. */
function readCompiled<DB, TB extends keyof DB, O, V extends Record<string, unknown>>(
  ctx: QueryContext,
  resource: ResourceDef,
  base: Base<DB, TB, O, V>,
  parsed: ParsedQuery,
  apply: ApplyRead,
): CompiledQuery<ResourceRow> {
  // a custom filter other than a word filter may read more of the request than the shape holds: never shaped
  if (!('build' in base) || !shapeableFilters(resource, parsed))
    return apply(built(ctx, base), resource, parsed, ctx).compile()
  const values = { ...base.values, tenantId: ctx.tenantId, readerId: ctx.actor?.userId }
  return readStatement(apply, base.build, resource)(values, resource, parsed)
}

/** What a shaped read's values add to its base's: the tenant, and the reader for word filters and inline relations. */
interface ShapeValues {
  tenantId: number
  readerId: number | undefined
}

const shapeContext = ({ tenantId, readerId }: ShapeValues): ShapeContext =>
  readerId === undefined ? { tenantId } : { tenantId, actor: { userId: readerId } }

/** The rows of `readCompiled`'s statement. */
const readRows = <DB, TB extends keyof DB, O, V extends Record<string, unknown>>(
  ctx: QueryContext,
  resource: ResourceDef,
  base: Base<DB, TB, O, V>,
  parsed: ParsedQuery,
  apply: ApplyRead,
) => executeCompiled(ctx.db, readCompiled(ctx, resource, base, parsed, apply))

/**
 * Runs a list request: validates the query keys, applies them in SQL to `base` (already scoped to the
 * tenant and access rule), and returns the page — or a cursor-backed stream when no `limit` was given.
 */
export async function listResource<DB, TB extends keyof DB, O, V extends Record<string, unknown>>(
  ctx: QueryContext,
  resource: ResourceDef,
  base: Base<DB, TB, O, V>,
  raw: RawListQuery,
): Promise<Readable | Record<string, unknown>[]> {
  const parsed = parseListQuery(resource, raw, ctx)
  const present = (rows: Record<string, unknown>[]) => presentRows(resource, parsed, rows, ctx)
  if (parsed.limit !== undefined) return present(await readRows(ctx, resource, base, parsed, applyPage))
  // most unlimited lists fit in one batch: read as a page of one row more (one round trip, no cursor:
  // S5 answered 20-40 % more requests so); a longer one is streamed from a cursor, from its start
  const head = await readRows(ctx, resource, base, firstBatchOf(parsed, BATCH_SIZE), applyPage)
  if (head.length <= BATCH_SIZE) return present(head)
  const compiled = readCompiled(ctx, resource, base, parsed, applyPage)
  return streamJsonArray(
    (chunkSize) => streamCompiled(ctx.db, compiled, chunkSize),
    present,
    JSON.stringify,
    BATCH_SIZE,
  )
}

/** Rows an unlimited list presents at a time, and the most it answers without a cursor. */
const BATCH_SIZE = 1000

/** Runs a single read with `selects`/`relations`; 404 when `base` finds nothing. */
export async function showResource<DB, TB extends keyof DB, O, V extends Record<string, unknown>>(
  ctx: QueryContext,
  resource: ResourceDef,
  base: Base<DB, TB, O, V>,
  raw: RawListQuery,
  label = 'Resource',
): Promise<Record<string, unknown>> {
  const item = await findResource(ctx, resource, base, raw)
  if (!item) throw notFound(label)
  return item
}

/** `showResource` for a row that may not exist: undefined instead of a 404. */
export async function findResource<DB, TB extends keyof DB, O, V extends Record<string, unknown>>(
  ctx: QueryContext,
  resource: ResourceDef,
  base: Base<DB, TB, O, V>,
  raw: RawListQuery,
): Promise<Record<string, unknown> | undefined> {
  const parsed = parseShowQuery(resource, raw, ctx)
  const [row] = await readRows(ctx, resource, base, parsed, applyShow)
  if (!row) return undefined
  const [item] = await presentRows(resource, parsed, [row], ctx)
  return item
}
