import type { Expression, RawBuilder, SqlBool } from 'kysely'
import type { Db } from '../db/schema.js'
import type { Actor } from '../auth/actor.js'
import { freezeDefinition } from '../db/database.js'

export type FieldType = 'integer' | 'string' | 'boolean' | 'timestamp' | 'date' | 'uuid' | 'json' | 'id'

export interface QueryContext {
  db: Db
  tenantId: number
  actor?: Actor
  /** Public base of this API and of the front end, for computed URL fields. */
  baseUrl?: string
  appUrl?: string
  /** Per-request switches a resource's `visible` rules read (e.g. `extendedFields`). */
  flags?: Record<string, boolean>
}

/**
 * A row as a resource's query reads it: the stored fields it selected, by name. A resource names the
 * columns its computed fields and relations read (`defineResource<{ id: number; … }>`).
 */
export type ResourceRow = Record<string, unknown>

/** A field a client may select, filter or sort by. Column fields default to `<alias>.<name>`. */
export interface FieldDef<Row = ResourceRow> {
  type: FieldType
  /**
   * SQL expression of the field (default: the column of the same name on the resource alias). A
   * subquery on another tenant table is a function of the tenant id and filters by it: Citus routes a
   * select-list subquery to one shard only when it names the tenant itself (docs/citus.md).
   */
  sql?: RawBuilder<unknown> | ((tenantId: number) => RawBuilder<unknown>)
  /** Computed in JavaScript from other fields (never filterable/sortable); `requires` lists them. */
  // a method, so that a resource of a narrower row is a ResourceDef of any row
  compute?(row: Row, ctx: QueryContext): unknown
  requires?: string[]
  filterable?: boolean
  sortable?: boolean
  /** Part of the default selection when `selects` is absent (default true, false for computed). */
  byDefault?: boolean
  /** Gate on who may select it; selecting it without the right → 422. */
  visible?: (ctx: QueryContext) => boolean
  /**
   * Who may learn the field's value at all: filter, sort and text search on it (default: `visible`).
   * Wider than `visible` where a value is readable but not output by this read (users' extended
   * fields on a list, for callers who may read them on a show). Selecting needs both.
   */
  readable?: (ctx: QueryContext) => boolean
  /** Columns that exist only to compute others and are never output. */
  internal?: boolean
}

/** A relation loaded in one batched query for all rows of a page. */
export interface RelationDef {
  /** The field of the parent row whose values key the relation (e.g. `role_id`, `id`). */
  key: string
  many: boolean
  /** Called with the distinct non-null values of `key` on the page's rows. */
  load(ctx: QueryContext, keys: unknown[]): Promise<ReadonlyMap<unknown, unknown>>
  /** Gate on who may load it: without the right it is an unknown relation (422), like a field. */
  visible?: (ctx: QueryContext) => boolean
  /**
   * The relation read with the rows themselves instead of by a second statement: `columns` are
   * select-list expressions (scalar subqueries naming the tenant) for this request, undefined where the
   * context lacks what they read (a shaped read knows the tenant only: `load` serves it then);
   * `assemble` makes a row's value of the relation from them.
   */
  inline?: {
    columns(ctx: ShapeContext): Record<string, RawBuilder<unknown>> | undefined
    assemble(values: Record<string, unknown>): unknown
  }
}

/**
 * A relation as a resource declares it: one member per field of its row, so that a literal `key`
 * types the keys `load` gets (the distinct non-null values of that field).
 */
export type RelationDecl<Row> = {
  [K in keyof Row & string]: Omit<RelationDef, 'key' | 'load'> & {
    key: K
    load(ctx: QueryContext, keys: Array<NonNullable<Row[K]>>): Promise<ReadonlyMap<unknown, unknown>>
  }
}[keyof Row & string]

/**
 * `filter[text]`: a case-insensitive substring search over the listed fields, of those the caller
 * may read (the fields' `readable`/`visible` rules): a hidden field is never searched.
 */
export interface TextSearchDef {
  fields: string[]
  /** The searched text for these readable fields (e.g. the expression of a trigram index); default: them joined by chr(31). */
  text?: (readable: readonly string[], ctx: QueryContext) => RawBuilder<unknown> | undefined
}

/**
 * What a read compiled once per shape (`shapedStatement`) knows of its request: the tenant and the
 * reader's user id, both stand-ins that can only be passed on to SQL as parameters.
 */
export interface ShapeContext {
  tenantId: number
  actor?: { userId: number }
}

/**
 * A filter key that is not a plain field (e.g. `filter[text]`, `filter[unread]`). A function may read
 * all of the request: a read using it is compiled afresh each time.
 */
export type CustomFilter = ((value: unknown, ctx: QueryContext) => Expression<SqlBool>) | WordFilter

/**
 * A custom filter whose value is one word of a fixed list (anything else is a 422 naming the list) and
 * whose SQL reads of the request only what a `ShapeContext` holds: a read using it is compiled once per
 * shape, like one with plain filters only (the pending list, S16).
 */
export interface WordFilter {
  words: readonly string[]
  sql: (word: string, ctx: ShapeContext) => Expression<SqlBool>
}

export interface ResourceDef {
  name: string
  /** SQL alias of the main table in the list query. */
  alias: string
  fields: Record<string, FieldDef>
  relations?: Record<string, RelationDef>
  defaultRelations?: string[]
  customFilters?: Record<string, CustomFilter>
  /** `filter[text]` (a custom filter of that name is not allowed beside it). */
  textSearch?: TextSearchDef
  /** Default order, e.g. `['id']` or `['-created_at', '-id']`. */
  defaultSort: string[]
  /** Tie-breaker appended to every sort so that paging is stable. */
  uniqueKey: string
}

/** A resource as it is declared: its computed fields and relations read the columns of `Row`. */
export interface ResourceDecl<Row> extends Omit<ResourceDef, 'fields' | 'relations'> {
  fields: Record<string, FieldDef<Row>>
  relations?: Record<string, RelationDecl<Row>>
}

export function defineResource<Row extends ResourceRow = ResourceRow>(def: ResourceDecl<Row>): ResourceDef {
  // frozen: shaped statements take a resource as a fixed argument by its identity
  return freezeDefinition(def)
}
