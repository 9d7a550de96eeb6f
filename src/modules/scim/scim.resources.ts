import type { Actor } from '../../platform/auth/actor.js'
import { ScimError } from './scim.errors.js'
import { DEFAULT_COUNT, MAX_RESULTS } from './scim.discovery.js'
import { normalizePath } from './scim-filter.queries.js'
import { LIST_RESPONSE, type ScimListQuery } from './scim.schemas.js'
import type { ListPage } from './scim.queries.js'

/** What every SCIM resource service shares: ids, meta, versions, pages. */

/** What every SCIM client may do in the services: every user and department permission. */
export const SCIM_PERMISSIONS: ReadonlySet<string> = new Set([
  'users.view',
  'users.viewDetails',
  'users.create',
  'users.update',
  'users.delete',
  'users.administrate',
  'departments.view',
  'departments.manage',
])

/**
 * The SCIM client as an actor: the user and department permissions, and those of the role it gives the
 * users it creates (the token's creator held them all), so that the users module's rule "no one grants
 * what they do not hold" lets it assign that role and change the credentials of that role's holders.
 */
export function scimActor(tenantId: number, tokenId: number, defaultRolePermissions: readonly string[]): Actor {
  return {
    userId: 0,
    tenantId,
    roleId: 0,
    departmentIds: [],
    permissions: new Set([...SCIM_PERMISSIONS, ...defaultRolePermissions]),
    isAdmin: false,
    langId: null,
    tokenId: 0,
    scimTokenId: tokenId,
  }
}

/** A resource id from the path: our ids are positive integers; anything else is no resource. */
export function parseId(id: string, what: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(id)) throw new ScimError(404, `${what} ${id} not found`)
  return Number(id)
}

/** `YYYY-MM-DD HH:MM:SS` (UTC, as the pool returns timestamps) → xsd:dateTime. */
export const isoTime = (timestamp: string) => `${timestamp.replace(' ', 'T')}Z`

export const etag = (version: string) => `W/"${version}"`

/** `If-Match` on a change: 412 when the client's version (weak or strong form) is not the stored ETag. */
export function checkIfMatch(ifMatch: string | undefined, storedEtag: string): void {
  if (!ifMatch || ifMatch.trim() === '*') return
  const strong = (tag: string) => tag.replace(/^W\//, '')
  const wanted = ifMatch.split(',').map((v) => strong(v.trim()))
  if (!wanted.includes(strong(storedEtag)))
    throw new ScimError(412, 'The resource was changed since the version named in If-Match')
}

/** The one version an `If-Match` names (`W/"123"` → `123`); undefined for none, `*` or a list. */
export function singleVersion(ifMatch: string | undefined): string | undefined {
  const match = /^\s*(?:W\/)?"([0-9]+)"\s*$/.exec(ifMatch ?? '')
  return match?.[1]
}

export interface Meta {
  resourceType: string
  created: string
  lastModified: string
  location: string
  version: string
}

export function meta(
  resourceType: string,
  base: string,
  endpoint: string,
  row: { id: number; created_at: string; updated_at: string; version: string },
): Meta {
  return {
    resourceType,
    created: isoTime(row.created_at),
    lastModified: isoTime(row.updated_at),
    location: `${base}/${endpoint}/${row.id}`,
    version: etag(row.version),
  }
}

/** startIndex (1-based; below 1 counts as 1) and count (negative counts as 0; at most MAX_RESULTS). */
export function page(query: ScimListQuery): { offset: number; limit: number; startIndex: number } {
  const startIndex = Math.max(1, query.startIndex ?? 1)
  const limit = Math.min(MAX_RESULTS, Math.max(0, query.count ?? DEFAULT_COUNT))
  return { offset: startIndex - 1, limit, startIndex }
}

/** The ORDER BY of a list: `sortBy` among the sortable attributes (else 400 invalidValue), `sortOrder`. */
export function sortOf(
  query: ScimListQuery,
  sortable: Readonly<Record<string, string>>,
  coreSchema: string,
): { sortColumn: string; direction: 'asc' | 'desc' } {
  const sortColumn = sortable[query.sortBy ? normalizePath(query.sortBy, coreSchema) : 'id']
  if (!sortColumn) throw new ScimError(400, `Cannot sort by "${query.sortBy}"`, 'invalidValue')
  return { sortColumn, direction: query.sortOrder === 'descending' ? 'desc' : 'asc' }
}

/** A list's page and ORDER BY as the list queries take them (`page`, then `sortOf`), with its startIndex. */
export function listPage(
  query: ScimListQuery,
  sortable: Readonly<Record<string, string>>,
  coreSchema: string,
): ListPage & { startIndex: number } {
  const { offset, limit, startIndex } = page(query)
  return { offset, limit, startIndex, ...sortOf(query, sortable, coreSchema) }
}

export const listResponse = (resources: unknown[], total: number, startIndex: number) => ({
  schemas: [LIST_RESPONSE],
  totalResults: total,
  startIndex,
  itemsPerPage: resources.length,
  Resources: resources,
})

/** Entra ID sends booleans as "True"/"False". */
export function booleanOf(value: unknown, attribute: string): boolean | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value === 'boolean') return value
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true'
  throw new ScimError(400, `${attribute} must be a boolean`, 'invalidValue')
}
