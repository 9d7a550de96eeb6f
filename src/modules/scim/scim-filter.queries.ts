import { type RawBuilder, sql } from 'kysely'
import { parse, type Filter } from 'scim2-parse-filter'
import { ScimError } from './scim.errors.js'

/**
 * No statement here: the SQL fragments a SCIM filter becomes, kept among the queries files because
 * they are SQL (issue 40; docs/CONTRIBUTING-modules.md).
 *
 * SCIM filters (RFC 7644 §3.4.2.2) as SQL: `scim2-parse-filter` parses the text, each attribute path
 * becomes a column expression of the resource's table, values become parameters. The result is one
 * WHERE condition run by PostgreSQL (indexes on `lower(username)`, `external_id`, …), never a scan
 * of the tenant in memory.
 */

export type ScalarType = 'id' | 'string' | 'boolean' | 'datetime'

/** A single-valued attribute: its SQL expression, type and whether string comparisons respect case. */
export interface ScalarAttribute {
  kind: 'scalar'
  type: ScalarType
  sql: RawBuilder<unknown>
  caseExact?: boolean
}

/**
 * A multi-valued attribute: `present` holds when the resource has a value (a stored column of one
 * value, such as the one email), or `exists` wraps a condition over the rows of a related table.
 */
export interface MultiAttribute {
  kind: 'multi'
  /** The sub-attribute a filter on the attribute itself compares (`emails eq "x"` = `emails.value eq "x"`). */
  main: string
  sub: Record<string, ScalarAttribute>
  present?: RawBuilder<boolean>
  exists?: (condition: RawBuilder<boolean>) => RawBuilder<boolean>
}

export type FilterAttribute = ScalarAttribute | MultiAttribute

/** Lower-cased attribute path (core schema URN stripped) → attribute. */
export type AttributeMap = Record<string, FilterAttribute>

export const scalar = (type: ScalarType, expression: RawBuilder<unknown>, caseExact = false): ScalarAttribute => ({
  kind: 'scalar',
  type,
  sql: expression,
  caseExact,
})
/** A sub-attribute whose value is the same for every stored value (the one email is of type "work"). */
export const constant = (value: string | boolean): ScalarAttribute =>
  typeof value === 'boolean' ? scalar('boolean', sql`${value}::boolean`) : scalar('string', sql`${value}::text`, false)

const invalidFilter = (message: string) => new ScimError(400, message, 'invalidFilter')

/** The attribute path without the core schema's URN, lower-cased (attribute names are case-insensitive). */
export function normalizePath(path: string, coreSchema: string): string {
  const lower = path.toLowerCase()
  const core = `${coreSchema.toLowerCase()}:`
  return lower.startsWith(core) ? lower.slice(core.length) : lower
}

type CompValue = boolean | null | number | string

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

function compareScalar(attribute: ScalarAttribute, op: string, value: CompValue, path: string): RawBuilder<boolean> {
  const column = attribute.sql
  if (op === 'pr')
    return attribute.type === 'string'
      ? sql<boolean>`(${column} is not null and ${column} <> '')`
      : sql<boolean>`${column} is not null`
  if (value === null) {
    if (op === 'eq') return sql<boolean>`${column} is null`
    if (op === 'ne') return sql<boolean>`${column} is not null`
    throw invalidFilter(`"${op}" cannot compare ${path} with null`)
  }
  switch (attribute.type) {
    case 'boolean': {
      if (typeof value !== 'boolean') throw invalidFilter(`${path} is a boolean: compare it with true or false`)
      if (op === 'eq') return sql<boolean>`${column} = ${value}`
      if (op === 'ne') return sql<boolean>`${column} is distinct from ${value}`
      throw invalidFilter(`"${op}" does not apply to the boolean ${path}`)
    }
    case 'datetime': {
      if (typeof value !== 'string' || Number.isNaN(Date.parse(value)))
        throw invalidFilter(`${path} is a dateTime: compare it with an xsd:dateTime string`)
      const at = sql`${new Date(value).toISOString()}::timestamptz`
      return ordered(op, column, at, path, 'dateTime')
    }
    case 'id': {
      const text = typeof value === 'number' ? String(value) : value
      if (typeof text !== 'string') throw invalidFilter(`${path} is a string: compare it with a string`)
      // ids are numbers stored as bigint: a text that is no such number matches no record
      if (op === 'eq' || op === 'ne') {
        const id = /^[1-9][0-9]{0,15}$/.test(text) ? Number(text) : undefined
        if (id === undefined) return op === 'eq' ? sql<boolean>`false` : sql<boolean>`true`
        return op === 'eq' ? sql<boolean>`${column} = ${id}` : sql<boolean>`${column} <> ${id}`
      }
      return textCompare(op, sql`${column}::text`, text, path, true)
    }
    case 'string': {
      if (typeof value !== 'string') throw invalidFilter(`${path} is a string: compare it with a "string"`)
      return textCompare(op, column, value, path, attribute.caseExact ?? false)
    }
  }
}

function ordered(
  op: string,
  column: RawBuilder<unknown>,
  value: RawBuilder<unknown>,
  path: string,
  type: string,
): RawBuilder<boolean> {
  switch (op) {
    case 'eq':
      return sql<boolean>`${column} = ${value}`
    case 'ne':
      return sql<boolean>`${column} is distinct from ${value}`
    case 'gt':
      return sql<boolean>`${column} > ${value}`
    case 'ge':
      return sql<boolean>`${column} >= ${value}`
    case 'lt':
      return sql<boolean>`${column} < ${value}`
    case 'le':
      return sql<boolean>`${column} <= ${value}`
    default:
      throw invalidFilter(`"${op}" does not apply to the ${type} ${path}`)
  }
}

function textCompare(
  op: string,
  column: RawBuilder<unknown>,
  value: string,
  path: string,
  caseExact: boolean,
): RawBuilder<boolean> {
  const left = caseExact ? column : sql`lower(${column})`
  const text = caseExact ? value : value.toLowerCase()
  switch (op) {
    case 'co':
      return sql<boolean>`${left} like ${`%${escapeLike(text)}%`}`
    case 'sw':
      return sql<boolean>`${left} like ${`${escapeLike(text)}%`}`
    case 'ew':
      return sql<boolean>`${left} like ${`%${escapeLike(text)}`}`
    default:
      return ordered(op, left, sql`${text}::text`, path, 'string')
  }
}

export interface FilterContext {
  attributes: AttributeMap
  coreSchema: string
}

/** Finds an attribute path: `userName`, `name.givenName`, `emails.value`, `emails` (its main sub-attribute). */
function resolve(ctx: FilterContext, path: string): { attribute: ScalarAttribute; multi?: MultiAttribute } | undefined {
  const key = normalizePath(path, ctx.coreSchema)
  const direct = ctx.attributes[key]
  if (direct?.kind === 'scalar') return { attribute: direct }
  if (direct?.kind === 'multi') return { attribute: direct.sub[direct.main]!, multi: direct }
  const dot = key.lastIndexOf('.')
  if (dot < 0) return undefined
  const parent = ctx.attributes[key.slice(0, dot)]
  const sub = parent?.kind === 'multi' ? parent.sub[key.slice(dot + 1)] : undefined
  return sub && parent?.kind === 'multi' ? { attribute: sub, multi: parent } : undefined
}

/** A condition on the values of a multi-valued attribute: within the related rows, or on the stored value. */
function withinValues(multi: MultiAttribute, condition: RawBuilder<boolean>): RawBuilder<boolean> {
  if (multi.exists) return multi.exists(condition)
  return sql<boolean>`(${multi.present ?? sql`true`} and ${condition})`
}

function toSql(ctx: FilterContext, filter: Filter, depth: number): RawBuilder<boolean> {
  if (depth > 50) throw invalidFilter('The filter nests too deeply')
  switch (filter.op) {
    case 'and':
    case 'or': {
      const parts = filter.filters.map((f) => toSql(ctx, f, depth + 1))
      return sql<boolean>`(${sql.join(parts, filter.op === 'and' ? sql` and ` : sql` or `)})`
    }
    case 'not':
      // a comparison with a missing value is unknown (null): `not` of it must hold, so it counts as false
      // here. Only here: a bare comparison stays indexable (`lower(u.username) = $1`)
      return sql<boolean>`not coalesce(${toSql(ctx, filter.filter, depth + 1)}, false)`
    case '[]': {
      const key = normalizePath(filter.attrPath, ctx.coreSchema)
      const multi = ctx.attributes[key]
      if (multi?.kind !== 'multi')
        throw invalidFilter(`${filter.attrPath} is not a multi-valued attribute of this resource`)
      const inner: FilterContext = { attributes: multi.sub, coreSchema: ctx.coreSchema }
      return withinValues(multi, toSql(inner, filter.valFilter, depth + 1))
    }
    default: {
      const found = resolve(ctx, filter.attrPath)
      if (!found) throw invalidFilter(`Unknown attribute "${filter.attrPath}" in the filter`)
      const value = filter.op === 'pr' ? null : filter.compValue
      const comparison = compareScalar(found.attribute, filter.op, value, filter.attrPath)
      if (!found.multi) return comparison
      if (filter.op === 'pr' && found.multi.exists) return found.multi.exists(sql<boolean>`true`)
      return withinValues(found.multi, comparison)
    }
  }
}

/** The SQL condition of a SCIM filter text; 400 `invalidFilter` when it does not parse or names an unknown attribute. */
export function filterToSql(text: string, ctx: FilterContext): RawBuilder<boolean> {
  let filter: Filter
  try {
    filter = parse(text)
  } catch (error) {
    throw invalidFilter(`The filter does not parse: ${error instanceof Error ? error.message : String(error)}`)
  }
  return toSql(ctx, filter, 0)
}
