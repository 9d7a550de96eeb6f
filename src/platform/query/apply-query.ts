import { Readable } from 'node:stream'
import {
  type AliasedExpression,
  PostgresQueryCompiler,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
  type RawBuilder,
} from 'kysely'
import { invalidField } from '../http/errors.js'
import type { QueryContext, ResourceDef, ResourceRow, TextSearchDef } from './resource.js'
import { mayRead, type CustomFilterClause, type FilterClause, type ParsedQuery } from './parse-query.js'

function fieldSql(resource: ResourceDef, name: string, tenantId: number): RawBuilder<unknown> {
  const field = resource.fields[name]
  if (typeof field?.sql === 'function') return field.sql(tenantId)
  return field?.sql ?? sql.ref(`${resource.alias}.${name}`)
}

/**
 * What a remembered parsed query implies, worked out once. Remembered queries are the frozen ones
 * (`parseListQuery`), each parsed for one resource.
 */
interface Implied {
  fields?: string[]
  rowsAsPresented?: boolean
  presenter?: Presenter
  firstBatch?: ParsedQuery
}
const implied = new WeakMap<ParsedQuery, Implied>()

/** `work(parsed)`, worked out once per remembered parse (under `part`), every time for any other. */
function once<K extends keyof Implied>(
  parsed: ParsedQuery,
  part: K,
  work: () => NonNullable<Implied[K]>,
): NonNullable<Implied[K]> {
  if (!Object.isFrozen(parsed)) return work()
  let known = implied.get(parsed)
  if (!known) implied.set(parsed, (known = {}))
  return (known[part] ??= work()) as NonNullable<Implied[K]>
}

/** The parse of an unlimited list's first read: the same query limited to one row more than `batchSize`. */
export function firstBatchOf(parsed: ParsedQuery, batchSize: number): ParsedQuery {
  return once(parsed, 'firstBatch', () => Object.freeze({ ...parsed, limit: batchSize + 1 }))
}

/** Names of the stored fields a query must fetch to output `selects` (computed fields pull their inputs). */
export function storedFieldsFor(resource: ResourceDef, parsed: ParsedQuery): string[] {
  return once(parsed, 'fields', () => collectStoredFields(resource, parsed))
}

function collectStoredFields(resource: ResourceDef, parsed: ParsedQuery): string[] {
  const needed = new Set<string>()
  const visit = (name: string) => {
    const field = resource.fields[name]
    if (!field) return
    if (field.compute) field.requires?.forEach(visit)
    else needed.add(name)
  }
  parsed.selects.forEach(visit)
  for (const relation of parsed.relations) visit(resource.relations![relation].key)
  visit(resource.uniqueKey)
  return [...needed]
}

function likePattern(value: string): string {
  return `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

function filterSql(resource: ResourceDef, clause: FilterClause, tenantId: number): RawBuilder<boolean> {
  const field = resource.fields[clause.field]
  const column = fieldSql(resource, clause.field, tenantId)
  switch (clause.op) {
    case 'null':
      return clause.value ? sql<boolean>`${column} is null` : sql<boolean>`${column} is not null`
    case 'eq':
      return sql<boolean>`${column} = ${clause.value}`
    case 'ne':
      return sql<boolean>`${column} is distinct from ${clause.value}`
    case 'gt':
      return sql<boolean>`${column} > ${clause.value}`
    case 'gte':
      return sql<boolean>`${column} >= ${clause.value}`
    case 'lt':
      return sql<boolean>`${column} < ${clause.value}`
    case 'lte':
      return sql<boolean>`${column} <= ${clause.value}`
    case 'in':
      return sql<boolean>`${column} in (${sql.join(clause.value)})`
    case 'nin':
      return sql<boolean>`(${column} is null or ${column} not in (${sql.join(clause.value)}))`
    case 'like':
      return field.type === 'string'
        ? sql<boolean>`${column} ilike ${likePattern(clause.value)}`
        : sql<boolean>`${column}::text ilike ${likePattern(clause.value)}`
  }
}

/** Adds the parsed filters (plain and custom) as SQL WHERE clauses. */
export function applyFilters<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  resource: ResourceDef,
  parsed: ParsedQuery,
  ctx: QueryContext,
): SelectQueryBuilder<DB, TB, O> {
  let query = qb
  for (const clause of parsed.filters) query = query.where(filterSql(resource, clause, ctx.tenantId))
  for (const custom of parsed.customFilters) query = query.where(customFilterSql(resource, custom, ctx))
  return query
}

function customFilterSql(resource: ResourceDef, custom: CustomFilterClause, ctx: QueryContext) {
  if (custom.name === 'text' && resource.textSearch)
    return textSearchSql(resource, resource.textSearch, custom.value, ctx)
  const filter = resource.customFilters![custom.name]
  // a word filter's value was checked against its words by the parse
  return typeof filter === 'function' ? filter(custom.value, ctx) : filter.sql(String(custom.value), ctx)
}

/** A read with these filters may be compiled once per shape: its custom filters (if any) are word filters only. */
export const shapeableFilters = (resource: ResourceDef, parsed: ParsedQuery): boolean =>
  parsed.customFilters.every(
    ({ name }) => !(name === 'text' && resource.textSearch) && typeof resource.customFilters![name] !== 'function',
  )

/**
 * `filter[text]` over the fields of the resource's text search that the caller may read (`mayRead`,
 * the rule of filters and sort): a substring of a hidden field never matches, so the answer cannot
 * tell its value (issue 33). Control characters (the separator among them) never match; LIKE
 * wildcards are literal.
 */
function textSearchSql(resource: ResourceDef, search: TextSearchDef, value: unknown, ctx: QueryContext) {
  if (typeof value !== 'string' || value.length > 255)
    throw invalidField('filter.text', 'must be a string of at most 255 characters')
  const readable = search.fields.filter((name) => resource.fields[name] && mayRead(resource.fields[name], ctx))
  if (readable.length === 0) return sql<SqlBool>`false`
  const text =
    search.text?.(readable, ctx) ??
    sql.join(
      readable.map((name) => sql`coalesce(${fieldSql(resource, name, ctx.tenantId)}::text, '')`),
      sql` || chr(31) || `,
    )
  // eslint-disable-next-line no-control-regex -- control characters are stripped on purpose (see above)
  const term = value.replace(/[\x00-\x1f]/g, '').replace(/[\\%_]/g, (c) => `\\${c}`)
  return sql<SqlBool>`${text} ilike ${`%${term}%`}`
}

/**
 * Applies selects, filters, sort and paging to a tenant-scoped (and access-filtered) query.
 * Everything runs in SQL: the page limit applies after filters and access rules.
 */
export function applyListQuery<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  resource: ResourceDef,
  parsed: ParsedQuery,
  ctx: QueryContext,
): SelectQueryBuilder<DB, TB, O & ResourceRow> {
  let query = applySelects(applyFilters(qb, resource, parsed, ctx), resource, parsed, ctx.tenantId, ctx)
  const sort = [...parsed.sort]
  if (!sort.some((s) => s.field === resource.uniqueKey))
    sort.push({ field: resource.uniqueKey, desc: sort[0]?.desc ?? false })
  for (const { field, desc } of sort) {
    // nulls sort last both ways. `asc` is PostgreSQL's default order, so plain (tenant_id, id) btree
    // indexes serve ascending pages with an early stop; descending lists that must be fast declare
    // `desc nulls last` indexes (notifications). Any other null order would force a full sort.
    query = query.orderBy(fieldSql(resource, field, ctx.tenantId), desc ? sql`desc nulls last` : sql`asc`)
  }
  if (parsed.limit !== undefined) query = query.limit(parsed.limit)
  if (parsed.offset !== undefined && parsed.offset > 0) query = query.offset(parsed.offset)
  return query
}

const selectionCache = new WeakMap<ResourceDef, Map<string, RawBuilder<unknown>>>()

/**
 * The select list of these stored fields as ONE prebuilt SQL fragment per resource and field set:
 * Kysely node trees are immutable, so it is built once and reused by every request (building and
 * freezing a node per field on each request was a tenth of a primary-key read's CPU).
 */
function selection(resource: ResourceDef, fields: string[], tenantId: number): RawBuilder<unknown> {
  // a field that depends on the tenant is built for each request
  if (fields.some((name) => typeof resource.fields[name]?.sql === 'function')) {
    return sql.join(fields.map((name) => sql`${fieldSql(resource, name, tenantId)} as ${sql.id(name)}`))
  }
  let byFields = selectionCache.get(resource)
  if (!byFields) selectionCache.set(resource, (byFields = new Map()))
  const key = fields.join(',')
  let built = byFields.get(key)
  if (!built) {
    built = sql.join(fields.map((name) => sql`${fieldSql(resource, name, tenantId)} as ${sql.id(name)}`))
    // without parameters, the fragment is rendered to text once (compiling it visits no nodes)
    const rendered = compiler.compileQuery(built.toOperationNode())
    if (rendered.parameters.length === 0) built = sql.raw(rendered.sql)
    if (byFields.size < 500) byFields.set(key, built)
  }
  return built
}
const compiler = new PostgresQueryCompiler()

/** The select-list name of a column of an inline relation (`RelationDef.inline`). */
const inlineColumn = (relation: string, column: string) => `__${relation}__${column}`

/** The inline relations' columns this request reads with the rows (none without a context that has them). */
function inlineSelection(resource: ResourceDef, parsed: ParsedQuery, ctx?: QueryContext): RawBuilder<unknown>[] {
  if (!ctx || parsed.relations.length === 0) return []
  return parsed.relations.flatMap((name) => {
    const columns = resource.relations![name].inline?.columns(ctx)
    return Object.entries(columns ?? {}).map(
      ([column, value]) => sql`${value} as ${sql.id(inlineColumn(name, column))}`,
    )
  })
}

/**
 * Selects just the stored fields needed (`selects`, relation keys, the unique key), and the columns of
 * the requested relations read inline when the request's context `ctx` is given.
 */
export function applySelects<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  resource: ResourceDef,
  parsed: ParsedQuery,
  tenantId: number,
  ctx?: QueryContext,
): SelectQueryBuilder<DB, TB, O & ResourceRow> {
  const inline = inlineSelection(resource, parsed, ctx)
  const stored = selection(resource, storedFieldsFor(resource, parsed), tenantId)
  // A raw list of `expression as name` columns: Kysely types a select item as one aliased expression,
  // and the builder's rows by the names it selects; this one's rows are the resource's stored fields.
  // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- a select list typed as one aliased item
  const columns = (inline.length > 0 ? sql.join([stored, ...inline]) : stored) as unknown as AliasedExpression<
    unknown,
    string
  >
  return qb.select(columns)
}

/**
 * Whether the rows read for `parsed` are already its response objects: it selects stored fields only,
 * exactly the ones read and in their order, and no relation (the driver gives SQL nulls as null).
 */
function rowsAsPresented(resource: ResourceDef, parsed: ParsedQuery): boolean {
  return once(parsed, 'rowsAsPresented', () => {
    const stored = storedFieldsFor(resource, parsed)
    return (
      parsed.relations.length === 0 &&
      stored.length === parsed.selects.length &&
      parsed.selects.every((name, i) => stored[i] === name && !resource.fields[name].compute)
    )
  })
}

type Presenter = (row: Record<string, unknown>, ctx: QueryContext) => Record<string, unknown>

/**
 * One row's response object for `parsed`, by a function made for its selects: an object literal of
 * the selected fields in order (computed ones called). Building the object key by key made every
 * row's object change shape once per field: a third of a 50-row page's own Node time (S4). The names
 * are the resource's own field names (validated selects), written into the source as JSON strings.
 */
function presenterFor(resource: ResourceDef, parsed: ParsedQuery): Presenter {
  const computes = parsed.selects.map((name) => resource.fields[name].compute)
  // a parse that is not remembered is presented once: no function is made for it
  if (!Object.isFrozen(parsed) || parsed.selects.includes('__proto__')) {
    return (row, ctx) =>
      Object.fromEntries(
        parsed.selects.map((name, i) => [name, computes[i] ? computes[i]!(row, ctx) : (row[name] ?? null)]),
      )
  }
  return once(parsed, 'presenter', () => {
    const members = parsed.selects.map(
      (name, i) =>
        `${JSON.stringify(name)}: ${computes[i] ? `computes[${i}](row, ctx)` : `row[${JSON.stringify(name)}] ?? null`}`,
    )
    // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- generated source: the literal above is a Presenter
    return new Function('computes', `return (row, ctx) => ({ ${members.join(', ')} })`)(computes) as Presenter
  })
}

/** Turns rows into response objects: only the selected fields, computed fields, batched relations. */
export async function presentRows(
  resource: ResourceDef,
  parsed: ParsedQuery,
  rows: Record<string, unknown>[],
  ctx: QueryContext,
): Promise<Record<string, unknown>[]> {
  if (rowsAsPresented(resource, parsed)) return rows
  const present = presenterFor(resource, parsed)
  const output = rows.map((row) => present(row, ctx))
  for (const name of parsed.relations) {
    const relation = resource.relations![name]
    const inline = relation.inline
    const prefix = inlineColumn(name, '')
    const inlineRead = inline && rows.length > 0 && Object.keys(rows[0]!).some((key) => key.startsWith(prefix))
    if (inlineRead) {
      rows.forEach((row, index) => {
        const values: Record<string, unknown> = {}
        for (const key in row) if (key.startsWith(prefix)) values[key.slice(prefix.length)] = row[key]
        output[index][name] = inline.assemble(values)
      })
      continue
    }
    const keys = [...new Set(rows.map((r) => r[relation.key]).filter((k) => k !== null && k !== undefined))]
    const loaded = keys.length > 0 ? await relation.load(ctx, keys) : new Map()
    rows.forEach((row, index) => {
      const value = loaded.get(row[relation.key])
      output[index][name] = value ?? (relation.many ? [] : null)
    })
  }
  return output
}

/** What a list is streamed from: batches of at most `chunkSize` rows (`streamCompiled`). */
export type RowBatches = (chunkSize: number) => AsyncIterable<Record<string, unknown>[]>

/**
 * Streams a list as a JSON array from a server-side cursor, presenting rows in batches, so that an
 * unlimited list of 100,000 rows never sits in memory at once. The first batch is read before
 * anything is answered: a failing query (bad input, database down) becomes a problem+json response
 * instead of a response destroyed after its 200 header, and a list that fits in one batch (most
 * do) is answered as a plain array in one write instead of a chunked stream.
 */
export async function streamJsonArray(
  source: RowBatches,
  present: (rows: Record<string, unknown>[]) => Promise<Record<string, unknown>[]>,
  stringify: (item: Record<string, unknown>) => string = JSON.stringify,
  batchSize = 1000,
): Promise<Readable | Record<string, unknown>[]> {
  const batches = source(batchSize)[Symbol.asyncIterator]()
  const first = await batches.next()
  const head = first.done ? [] : first.value
  let next = first.done ? first : await batches.next()
  if (next.done) return present(head)
  async function* generate(): AsyncGenerator<string> {
    let opened = false
    for (let batch = head; ; batch = next.value, next = await batches.next()) {
      const items = await present(batch)
      if (items.length > 0) {
        const text = items.map(stringify).join(',')
        yield opened ? `,${text}` : `[${text}`
        opened = true
      }
      if (next.done) break
    }
    yield opened ? ']' : '[]'
  }
  const stream = Readable.from(generate(), { objectMode: false })
  // a client that goes away early releases the cursor's connection
  stream.on('close', () => {
    void batches.return?.(undefined)
  })
  return stream
}
