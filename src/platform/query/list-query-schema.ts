import { Type, type TObject, type TProperties, type TSchema } from 'typebox'
import { FILTER_OPERATORS } from './parse-query.js'
import type { FieldDef, ResourceDef } from './resource.js'

const FILTER_ALIASES_NOTE = 'Aliases: is = eq, is_not = ne, value = like, not_in = nin.'
const selectsDescription = (resource: ResourceDef) =>
  `Comma-separated fields to return. Fields: ${selectableFields(resource).join(', ')}`

function selectableFields(resource: ResourceDef): string[] {
  return Object.entries(resource.fields)
    .filter(([, f]) => !f.internal)
    .map(([name]) => name)
}

function filterableFields(resource: ResourceDef): Array<[string, FieldDef]> {
  return Object.entries(resource.fields).filter(([, f]) => !f.internal && !f.compute && f.filterable !== false)
}

function sortableFields(resource: ResourceDef): string[] {
  return Object.entries(resource.fields)
    .filter(([, f]) => !f.internal && !f.compute && f.sortable !== false && f.type !== 'json')
    .map(([name]) => name)
}

const FilterValueSchema = Type.Union([Type.String(), Type.Array(Type.String())])

function filterFieldSchema(name: string, field: FieldDef): TSchema {
  // operator → value; the operators are listed in the description (a schema per operator per field
  // would repeat ten entries for every filterable field of every list in the document)
  const operators = Type.Record(Type.String(), FilterValueSchema, { description: `Operators on ${name}` })
  return Type.Optional(
    Type.Union([Type.String(), Type.Array(Type.String()), operators], {
      description: `${name} (${field.type}): filter[${name}]=value, or filter[${name}][op]=value with op one of ${FILTER_OPERATORS.join(', ')}`,
    }),
  )
}

/**
 * The `filter` query object of one resource, declared as an OpenAPI `deepObject` so that documentation
 * pages and generated clients send `filter[field]=value` (the parser still checks values and visibility).
 */
export function filterSchema(resource: ResourceDef): TObject {
  const properties: Record<string, TSchema> = Object.fromEntries(
    filterableFields(resource).map(([name, f]) => [name, filterFieldSchema(name, f)]),
  )
  for (const name of [...Object.keys(resource.customFilters ?? {}), ...(resource.textSearch ? ['text'] : [])]) {
    const custom = resource.customFilters?.[name]
    const words = custom && 'words' in custom ? ` (one of: ${custom.words.join(', ')})` : ''
    properties[name] = Type.Optional(
      Type.Union([Type.String(), Type.Array(Type.String())], {
        description: `${name}: a named filter of this list${words}`,
      }),
    )
  }
  return Type.Object(properties, {
    style: 'deepObject',
    explode: true,
    description: `Filters, e.g. filter[${filterableFields(resource)[0]?.[0] ?? 'id'}]=value. ${FILTER_ALIASES_NOTE}`,
  })
}

const paging = {
  limit: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000, description: 'At most this many rows' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000, description: 'Skip this many rows' })),
}

/** The query keys of a single read of `resource` (contract 00 §7): selects and relations, with their aliases. */
export function showQuerySchema(resource: ResourceDef, extra: TProperties = {}) {
  const relations = Object.keys(resource.relations ?? {})
  const relationsDescription =
    relations.length > 0
      ? `Relations to load (comma or | separated): ${relations.join(', ')}`
      : 'This resource has no relations'
  return Type.Object({
    selects: Type.Optional(Type.String({ maxLength: 2000, description: selectsDescription(resource) })),
    select: Type.Optional(Type.String({ maxLength: 2000, description: 'Alias of selects' })),
    relations: Type.Optional(Type.String({ maxLength: 2000, description: relationsDescription })),
    include: Type.Optional(Type.String({ maxLength: 2000, description: 'Alias of relations' })),
    ...extra,
  })
}

/** The query keys of a list of `resource`: show keys plus filter (deepObject), sort, limit, offset. */
export function listQuerySchema(resource: ResourceDef, extra: TProperties = {}) {
  return Type.Object({
    ...showQuerySchema(resource).properties,
    filter: Type.Optional(filterSchema(resource)),
    sort: Type.Optional(
      Type.String({
        maxLength: 500,
        description: `Comma-separated; prefix - for descending. Sortable: ${sortableFields(resource).join(', ')}`,
      }),
    ),
    ...paging,
    ...extra,
  })
}
