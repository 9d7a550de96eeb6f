/**
 * `attributes` and `excludedAttributes` (RFC 7644 §3.4.2.5) on a resource as presented: paths are
 * case-insensitive, may name a sub-attribute (`name.givenName`, `emails.value`) or be qualified by a
 * schema URN (`urn:…:enterprise:2.0:User:employeeNumber`). `id` and `schemas` are always returned.
 */

type Json = Record<string, unknown>

const ALWAYS = new Set(['id', 'schemas'])

/** `a,b.c` → [['a'], ['b','c']] with URN qualifiers resolved against the resource's schemas. */
function parsePaths(list: string | undefined, coreSchema: string, extensions: string[]): string[][] {
  if (!list) return []
  return list
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((path) => {
      const lower = path.toLowerCase()
      for (const schema of [coreSchema, ...extensions]) {
        const urn = schema.toLowerCase()
        if (lower === urn) return schema === coreSchema ? [] : [urn]
        if (lower.startsWith(`${urn}:`)) {
          const rest = lower.slice(urn.length + 1).split('.')
          return schema === coreSchema ? rest : [urn, ...rest]
        }
      }
      return lower.split('.')
    })
    .filter((segments) => segments.length > 0)
}

const keyOf = (object: Json, lowerName: string) => Object.keys(object).find((k) => k.toLowerCase() === lowerName)
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)

function pickValue(value: unknown, paths: string[][]): unknown {
  if (paths.some((p) => p.length === 0)) return value
  if (Array.isArray(value)) return value.map((item) => pickValue(item, paths))
  return isObject(value) ? pickObject(value, paths) : value
}

function pickObject(source: Json, paths: string[][]): Json {
  const out: Json = {}
  for (const [head] of paths) {
    const key = keyOf(source, head!)
    if (key === undefined) continue
    out[key] = pickValue(
      source[key],
      paths.filter((p) => p[0] === head).map((p) => p.slice(1)),
    )
  }
  return out
}

function omitValue(value: unknown, paths: string[][]): unknown {
  if (Array.isArray(value)) return value.map((item) => omitValue(item, paths))
  return isObject(value) ? omitObject(value, paths) : value
}

function omitObject(source: Json, paths: string[][]): Json {
  const out: Json = { ...source }
  for (const [head, ...rest] of paths) {
    const key = keyOf(out, head!)
    if (key === undefined) continue
    if (rest.length === 0) delete out[key]
    else out[key] = omitValue(out[key], [rest])
  }
  return out
}

export interface Projection {
  attributes?: string
  excludedAttributes?: string
}

/** Whether the projection returns the top-level attribute `name` (to skip loading what is not returned). */
export function projects(projection: Projection, name: string, coreSchema: string): boolean {
  const lower = name.toLowerCase()
  const included = parsePaths(projection.attributes, coreSchema, [])
  if (included.length > 0) return included.some((p) => p[0] === lower)
  return !parsePaths(projection.excludedAttributes, coreSchema, []).some((p) => p.length === 1 && p[0] === lower)
}

/** The resource with only the requested attributes (or without the excluded ones). */
export function project<T extends Json>(
  resource: T,
  projection: Projection,
  coreSchema: string,
  extensions: string[] = [],
): Json {
  const included = parsePaths(projection.attributes, coreSchema, extensions)
  if (included.length > 0) {
    const picked = pickObject(resource, included)
    for (const key of ALWAYS) if (key in resource) picked[key] = resource[key]
    return picked
  }
  const excluded = parsePaths(projection.excludedAttributes, coreSchema, extensions).filter(
    (p) => !(p.length === 1 && ALWAYS.has(p[0]!)),
  )
  return excluded.length > 0 ? omitObject(resource, excluded) : resource
}
