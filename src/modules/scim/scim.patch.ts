import { scimPatch, ScimError as PatchError, type ScimPatchOperation, type ScimResource } from 'scim-patch'
import { ScimError } from './scim.errors.js'
import { PATCH_OP, type PatchOpBody } from './scim.schemas.js'

/**
 * PATCH (RFC 7644 §3.5.2) through `scim-patch`, after the dialects real clients send are made standard:
 * Entra ID's capitalized `op` ("Replace"), booleans as "True"/"False", and a `value` object of
 * attributes without `path` (its keys may be paths themselves: "name.givenName") become one operation
 * per attribute. Paths are checked against the resource's attributes first: an unknown one is 400
 * `invalidPath`, a read-only one 400 `mutability`.
 */

export interface PatchRules {
  /** Lower-cased top-level attribute → its canonical name; sub-attributes of complex ones by `parent.sub`. */
  attributes: Record<string, string>
  /** Lower-cased attribute names a client may not change. */
  readOnly: Set<string>
  /** Attributes whose values are booleans (sent as "True"/"False" by Entra ID). */
  booleans: Set<string>
  /** Schema URNs whose attributes may be named `urn:…:attribute`. */
  schemas: string[]
}

type Op = { op: 'add' | 'replace' | 'remove'; path?: string; value?: unknown }

const invalidPath = (path: string, why = 'names no attribute of this resource') =>
  new ScimError(400, `The PATCH path "${path}" ${why}`, 'invalidPath')

/** The canonical form of a path's attribute part (`username` → `userName`), checked against the rules. */
function canonicalPath(path: string, rules: PatchRules): { path: string; key: string } {
  let rest = path.trim()
  let prefix = ''
  const lower = rest.toLowerCase()
  for (const schema of rules.schemas) {
    const urn = schema.toLowerCase()
    if (lower === urn) return { path: schema, key: urn }
    if (lower.startsWith(`${urn}:`)) {
      prefix = `${schema}:`
      rest = rest.slice(urn.length + 1)
      break
    }
  }
  const match = /^([A-Za-z$][\w$-]*)(\[.*\])?(?:\.([A-Za-z$][\w$-]*))?$/.exec(rest)
  if (!match) throw invalidPath(path, 'is not a valid attribute path')
  const [, attribute, filter, sub] = match
  const headKey = `${prefix.toLowerCase()}${attribute!.toLowerCase()}`
  const head = rules.attributes[headKey]
  if (head === undefined) throw invalidPath(path)
  if (rules.readOnly.has(headKey)) throw new ScimError(400, `"${path}" is read-only`, 'mutability')
  let subName = ''
  let key = headKey
  if (sub !== undefined) {
    key = `${headKey}.${sub.toLowerCase()}`
    const canonical = rules.attributes[key]
    if (canonical === undefined) throw invalidPath(path)
    subName = `.${canonical}`
  }
  const headName = prefix ? `${prefix}${head}` : head
  return { path: `${headName}${filter ?? ''}${subName}`, key }
}

const asBoolean = (value: unknown) =>
  typeof value === 'string' && /^(true|false)$/i.test(value) ? value.toLowerCase() === 'true' : value

/** Entra ID's "True"/"False" as booleans, at the given attribute or inside the values sent for it. */
function booleans(value: unknown, key: string, rules: PatchRules): unknown {
  if (rules.booleans.has(key)) return asBoolean(value)
  if (Array.isArray(value)) return value.map((v) => booleans(v, key, rules))
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, booleans(v, `${key}.${k.toLowerCase()}`, rules)]),
    )
  }
  return value
}

/** The operations of a PatchOp body in standard form (see above). */
export function standardOperations(body: PatchOpBody, rules: PatchRules, currentId: string): Op[] {
  if (!body.schemas.includes(PATCH_OP))
    throw new ScimError(400, `A PATCH body names the schema ${PATCH_OP}`, 'invalidSyntax')
  const ops: Op[] = []
  for (const raw of body.Operations) {
    const op = typeof raw.op === 'string' ? raw.op.toLowerCase() : ''
    if (op !== 'add' && op !== 'replace' && op !== 'remove')
      throw new ScimError(400, `Unknown PATCH op "${String(raw.op)}": add, replace or remove`, 'invalidSyntax')
    const path = typeof raw.path === 'string' && raw.path.trim() !== '' ? raw.path : undefined
    if (path === undefined) {
      if (op === 'remove') throw new ScimError(400, 'A remove operation needs a path', 'noTarget')
      if (!raw.value || typeof raw.value !== 'object' || Array.isArray(raw.value))
        throw new ScimError(400, `An ${op} without path takes an object of attributes`, 'invalidValue')
      for (const [key, value] of Object.entries(raw.value)) {
        // Okta sends the id along in a replace of the whole group; it may only repeat the current one
        if (key.toLowerCase() === 'id' && String(value) === currentId) continue
        if (key.toLowerCase() === 'schemas') continue
        const canonical = canonicalPath(key, rules)
        ops.push({ op, path: canonical.path, value: booleans(value, canonical.key, rules) })
      }
      continue
    }
    const canonical = canonicalPath(path, rules)
    ops.push({
      op,
      path: canonical.path,
      value: op === 'remove' ? raw.value : booleans(raw.value, canonical.key, rules),
    })
  }
  return ops
}

/** Applies standard operations to a copy of the resource; the library's errors become RFC 7644 errors. */
export function applyPatch<T extends ScimResource>(resource: T, ops: Op[]): T {
  const operations: ScimPatchOperation[] = ops.map((o) =>
    o.op === 'remove'
      ? { op: 'remove', path: o.path ?? '', ...(o.value === undefined ? {} : { value: o.value }) }
      : { op: o.op, path: o.path, value: o.value },
  )
  try {
    return scimPatch(resource, operations, { mutateDocument: false, treatMissingAsAdd: true })
  } catch (error) {
    if (error instanceof PatchError) {
      const type =
        error.scimCode === 'noTarget' ? 'noTarget' : error.scimCode === 'invalidValue' ? 'invalidValue' : 'invalidPath'
      throw new ScimError(400, error.message, type)
    }
    throw error
  }
}
