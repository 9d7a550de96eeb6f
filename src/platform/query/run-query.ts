import type { Readable } from 'node:stream'
import type { SelectQueryBuilder } from 'kysely'
import { notFound } from '../http/errors.js'
import { applyListQuery, applySelects, presentRows, streamJsonArray } from './apply-query.js'
import { parseListQuery, parseShowQuery, type RawListQuery } from './parse-query.js'
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
  base: AnySelect,
  raw: RawListQuery,
  label = 'Resource',
): Promise<Record<string, unknown>> {
  const item = await findResource(ctx, resource, base, raw)
  if (!item) throw notFound(label)
  return item
}

/** `showResource` for a row that may not exist: undefined instead of a 404. */
export async function findResource(
  ctx: QueryContext,
  resource: ResourceDef,
  base: AnySelect,
  raw: RawListQuery,
): Promise<Record<string, unknown> | undefined> {
  const parsed = parseShowQuery(resource, raw, ctx)
  const row = await applySelects(base, resource, parsed, ctx.tenantId).executeTakeFirst()
  if (!row) return undefined
  const [item] = await presentRows(resource, parsed, [row as Record<string, unknown>], ctx)
  return item
}
