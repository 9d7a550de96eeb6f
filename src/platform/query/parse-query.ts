import { FieldErrorCollector } from '../http/errors.js'
import { freezeDefinition } from '../db/database.js'
import { parseBooleanWord, QUERY_BOOLEAN_WORDS } from '../text/boolean-words.js'
import type { FieldDef, QueryContext, ResourceDef } from './resource.js'

export const FILTER_OPERATORS = ['eq', 'ne', 'in', 'nin', 'gt', 'gte', 'lt', 'lte', 'like', 'null'] as const
export type FilterOperator = (typeof FILTER_OPERATORS)[number]
const OPERATOR_ALIASES: Record<string, FilterOperator> = { is: 'eq', is_not: 'ne', value: 'like', not_in: 'nin' }

/** A parsed filter: `null` takes a flag, `in`/`nin` a list, `like` a string, the others one coerced value. */
export type FilterClause = { field: string } & (
  | { op: 'null'; value: boolean }
  | { op: 'in' | 'nin'; value: unknown[] }
  | { op: 'like'; value: string }
  | { op: Exclude<FilterOperator, 'null' | 'in' | 'nin' | 'like'>; value: unknown }
)

export interface CustomFilterClause {
  name: string
  value: unknown
}

export interface ParsedQuery {
  selects: string[]
  relations: string[]
  filters: FilterClause[]
  customFilters: CustomFilterClause[]
  sort: Array<{ field: string; desc: boolean }>
  limit?: number
  offset?: number
}

export interface RawListQuery {
  selects?: string
  select?: string
  relations?: string
  include?: string
  /** An object like `filter[field]=value` (anything else is a 422) */
  filter?: unknown
  sort?: string
  limit?: number
  offset?: number
}

/** Looks a client-supplied name up as an own key only (`__proto__`, `constructor` are unknown names). */
function own<T>(record: Record<string, T> | undefined, name: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, name) ? record[name] : undefined
}

function splitList(value: string | undefined, separator: RegExp): string[] | undefined {
  if (value === undefined) return undefined
  return value
    .split(separator)
    .map((s) => s.trim())
    .filter(Boolean)
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/

/** Converts one filter value from its query-string form to the field's type; undefined = invalid. */
function coerce(field: FieldDef, raw: unknown): unknown {
  if (typeof raw !== 'string') return undefined
  switch (field.type) {
    case 'integer':
    case 'id': {
      if (!/^-?\d{1,15}$/.test(raw)) return undefined
      return Number(raw)
    }
    case 'boolean':
      return parseBooleanWord(raw, QUERY_BOOLEAN_WORDS)
    case 'uuid':
      return UUID.test(raw) ? raw.toLowerCase() : undefined
    case 'timestamp':
    case 'date':
      if (!TIMESTAMP.test(raw) || Number.isNaN(Date.parse(raw.replace(' ', 'T')))) return undefined
      return raw
    case 'string':
      return raw.length <= 1000 ? raw : undefined
    default:
      return undefined
  }
}

/** The caller may learn the field's value: filter, sort and search on it (issue 33: one rule for all three). */
export function mayRead(field: FieldDef, ctx: QueryContext): boolean {
  if (field.internal) return false
  const rule = field.readable ?? field.visible
  return rule ? rule(ctx) : true
}

/** The caller may select the field: readable, and output by this read. */
function isVisible(field: FieldDef, ctx: QueryContext): boolean {
  return mayRead(field, ctx) && (field.visible ? field.visible(ctx) : true)
}

/** How many parsed queries one resource remembers (a bound; past it the memory starts over), and their longest key. */
const MAX_REMEMBERED = 500
const MAX_REMEMBERED_KEY = 500
const remembered = new WeakMap<ResourceDef, Map<string, ParsedQuery>>()
const visibilityRules = new WeakMap<ResourceDef, Array<(ctx: QueryContext) => boolean>>()

/** What `ctx` may see of a resource, as one bit per distinct `visible` rule of its fields. */
function visibilityKey(resource: ResourceDef, ctx: QueryContext): string {
  let rules = visibilityRules.get(resource)
  if (!rules) {
    rules = [
      ...new Set([
        ...Object.values(resource.fields).flatMap((field) => [field.visible, field.readable]),
        ...Object.values(resource.relations ?? {}).map((relation) => relation.visible),
      ]),
    ].filter((rule) => rule !== undefined)
    visibilityRules.set(resource, rules)
  }
  let key = ''
  for (const rule of rules) key += rule(ctx) ? '1' : '0'
  return key
}

/** Remembered parses are deep-frozen: shaped statements then take one by its identity. */
const frozen = (parsed: ParsedQuery): ParsedQuery => freezeDefinition(parsed)

/**
 * Validates `selects`, `relations`, `filter`, `sort`, `limit`, `offset` against a resource declaration.
 * Every unknown or forbidden key is a 422 naming the query key (contract 00 §7).
 *
 * A parse depends on nothing but these keys and what the caller may see (the fields' `visible`
 * rules): it is remembered per resource and returned frozen, so that requests repeating one query (a
 * page, a single read, a count) skip the parsing and everything worked out from the parsed query
 * (`storedFieldsFor`, `parsedQueryShape`). Failed parses and long queries are not remembered.
 */
export function parseListQuery(resource: ResourceDef, raw: RawListQuery, ctx: QueryContext): ParsedQuery {
  const key = JSON.stringify([
    visibilityKey(resource, ctx),
    raw.selects,
    raw.select,
    raw.relations,
    raw.include,
    raw.filter,
    raw.sort,
    raw.limit,
    raw.offset,
  ])
  if (key.length > MAX_REMEMBERED_KEY) return parseAnyListQuery(resource, raw, ctx)
  let byKey = remembered.get(resource)
  if (!byKey) remembered.set(resource, (byKey = new Map()))
  let parsed = byKey.get(key)
  if (!parsed) {
    parsed = frozen(parseAnyListQuery(resource, raw, ctx))
    if (byKey.size >= MAX_REMEMBERED) byKey.clear()
    byKey.set(key, parsed)
  }
  return parsed
}

function parseAnyListQuery(resource: ResourceDef, raw: RawListQuery, ctx: QueryContext): ParsedQuery {
  const problems = new FieldErrorCollector()
  const selectsKey = raw.selects !== undefined ? 'selects' : 'select'
  const requested = splitList(raw.selects ?? raw.select, /,/)
  let selects: string[]
  if (requested) {
    selects = []
    for (const name of requested) {
      const field = own(resource.fields, name)
      // a field the caller may not read is an unknown one: the answer tells nothing about it
      if (!field || !isVisible(field, ctx)) problems.add(selectsKey, `unknown field "${name}"`)
      else if (!selects.includes(name)) selects.push(name)
    }
  } else {
    selects = Object.entries(resource.fields)
      .filter(([, f]) => (f.byDefault ?? !f.compute) && isVisible(f, ctx))
      .map(([name]) => name)
  }

  const relationsKey = raw.relations !== undefined ? 'relations' : 'include'
  const requestedRelations = splitList(raw.relations ?? raw.include, /[|,]/)
  const relations: string[] = []
  for (const name of requestedRelations ?? resource.defaultRelations ?? []) {
    const relation = own(resource.relations, name)
    if (!relation || (relation.visible && !relation.visible(ctx)))
      problems.add(relationsKey, `unknown relation "${name}"`)
    else if (!relations.includes(name)) relations.push(name)
  }

  const filters: FilterClause[] = []
  const customFilters: CustomFilterClause[] = []
  if (raw.filter !== undefined) {
    if (typeof raw.filter !== 'object' || raw.filter === null || Array.isArray(raw.filter)) {
      problems.add('filter', 'must be an object like filter[field]=value')
    } else {
      for (const [name, spec] of Object.entries(raw.filter)) {
        const path = `filter.${name}`
        const custom = own(resource.customFilters, name)
        if (custom && 'words' in custom && !(typeof spec === 'string' && custom.words.includes(spec))) {
          problems.add(path, `must be one of: ${custom.words.join(', ')}`)
          continue
        }
        if (custom || (name === 'text' && resource.textSearch)) {
          customFilters.push({ name, value: spec })
          continue
        }
        const field = own(resource.fields, name)
        if (!field || field.compute || field.filterable === false || !mayRead(field, ctx)) {
          problems.add(path, `unknown filter field "${name}"`)
          continue
        }
        const entries: Array<[string, unknown]> =
          spec !== null && typeof spec === 'object' && !Array.isArray(spec) ? Object.entries(spec) : [['eq', spec]]
        if (entries.length === 0) problems.add(path, 'needs a value or an operator')
        for (const [rawOp, rawValue] of entries) {
          const op = isFilterOperator(rawOp) ? rawOp : OPERATOR_ALIASES[rawOp]
          if (!op) {
            problems.add(`${path}.${rawOp}`, `unknown operator "${rawOp}"`)
            continue
          }
          const clause = parseFilterValue(field, name, op, rawValue)
          if (typeof clause === 'string')
            problems.add(
              rawOp === 'eq' && entries.length === 1 && (typeof spec !== 'object' || Array.isArray(spec))
                ? path
                : `${path}.${rawOp}`,
              clause,
            )
          else filters.push(clause)
        }
      }
    }
  }

  const sort: ParsedQuery['sort'] = []
  for (const item of splitList(raw.sort, /,/) ?? resource.defaultSort) {
    const desc = item.startsWith('-')
    const name = desc ? item.slice(1) : item.replace(/^\+/, '')
    const field = own(resource.fields, name)
    if (!field || field.compute || field.sortable === false || !mayRead(field, ctx) || field.type === 'json') {
      problems.add('sort', `cannot sort by "${name}"`)
    } else if (!sort.some((s) => s.field === name)) sort.push({ field: name, desc })
  }

  problems.throwIfAny('The query parameters are invalid')
  return { selects, relations, filters, customFilters, sort, limit: raw.limit, offset: raw.offset }
}

const isFilterOperator = (name: string): name is FilterOperator =>
  (FILTER_OPERATORS as readonly string[]).includes(name)

function parseFilterValue(field: FieldDef, name: string, op: FilterOperator, raw: unknown): FilterClause | string {
  if (Array.isArray(raw)) {
    // repeated keys (filter[id]=1&filter[id]=2) arrive as an array; nested objects inside it are malformed
    if (!raw.every((item) => typeof item === 'string')) return 'must be a value or an operator object, not both'
    raw = raw.join(',')
  }
  if (op === 'null') {
    const isNull = typeof raw === 'string' ? parseBooleanWord(raw, QUERY_BOOLEAN_WORDS) : undefined
    return isNull === undefined ? 'null takes true or false' : { field: name, op: 'null', value: isNull }
  }
  if ((op === 'eq' || op === 'ne') && raw === 'null') return { field: name, op: 'null', value: op === 'eq' }
  if (op === 'in' || op === 'nin') {
    if (typeof raw !== 'string') return 'must be a comma-separated list'
    const parts = raw
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)
    if (parts.length === 0 || parts.length > 1000) return 'must list between 1 and 1000 values'
    const values = parts.map((p) => coerce(field, p))
    if (values.some((v) => v === undefined)) return `has a value that is not a valid ${field.type}`
    return { field: name, op, value: values }
  }
  if (op === 'like') {
    if (typeof raw !== 'string' || raw.length > 1000) return 'must be a string'
    if (field.type === 'json') return 'cannot be searched'
    return { field: name, op, value: raw }
  }
  if (field.type === 'json') return 'cannot be filtered'
  const value = coerce(field, raw)
  if (value === undefined) return `must be a valid ${field.type}`
  if ((op === 'gt' || op === 'gte' || op === 'lt' || op === 'lte') && field.type === 'boolean')
    return 'cannot be compared'
  return { field: name, op, value }
}

/** `selects`/`relations` for single reads (no filter, sort or paging). */
export function parseShowQuery(resource: ResourceDef, raw: RawListQuery, ctx: QueryContext): ParsedQuery {
  return parseListQuery(
    resource,
    { selects: raw.selects, select: raw.select, relations: raw.relations, include: raw.include },
    ctx,
  )
}

/** JSON filter values (numbers, booleans, null) in the query-string form the parser reads. */
function filterValueToQueryForm(value: unknown): unknown {
  if (value === null) return 'null'
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (Array.isArray(value)) return value.map(filterValueToQueryForm).join(',')
  if (typeof value === 'object')
    return Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, filterValueToQueryForm(v)]))
  return value
}

/**
 * Validates only a `filter` object (for counts and bulk updates), with the same fields, operators and
 * 422s as list requests. Accepts the query-string form and JSON bodies (`{"read_at": null}`).
 */
export function parseFilterOnly(resource: ResourceDef, filter: unknown, ctx: QueryContext): ParsedQuery {
  const parsed = parseListQuery(
    resource,
    { filter: filter === undefined ? undefined : filterValueToQueryForm(filter) },
    ctx,
  )
  if (!Object.isFrozen(parsed)) return { ...parsed, selects: [], relations: [], sort: [] }
  let filterOnly = filtersOf.get(parsed)
  if (!filterOnly) filtersOf.set(parsed, (filterOnly = frozen({ ...parsed, selects: [], relations: [], sort: [] })))
  return filterOnly
}
const filtersOf = new WeakMap<ParsedQuery, ParsedQuery>()
