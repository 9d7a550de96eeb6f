/**
 * The existence rule (issue 18, decision 0004): for a caller who may not see a resource, every route
 * answers exactly as it does for an id that does not exist — same status, `code`, fields and message —
 * whether the id is in the path, the query or the body. So visibility is decided before existence is
 * revealed: a lookup that finds a row the caller may not see returns nothing, and the caller's one
 * "not found" branch answers for both. Only after that may a route tell a visible row's caller that it
 * lacks a right on it (403).
 */
export async function visibleOrNothing<T>(found: T | undefined, mayKnow: (row: T) => boolean | Promise<boolean>): Promise<T | undefined> {
  if (found === undefined) return undefined
  return (await mayKnow(found)) ? found : undefined
}
