/**
 * The existence rule (issue 18, decision 0004): for a caller who may not see a resource, every route
 * answers exactly as it does for an id that does not exist — same status, `code`, fields and message —
 * whether the id is in the path, the query or the body. So visibility is decided before existence is
 * revealed: a lookup that finds a row the caller may not know returns nothing, and the caller's one
 * "not found" branch answers for both. Only a caller who may see a row can learn that it lacks a
 * further right on it (403).
 *
 * The answer's timing must not tell either: the visibility check always runs, also for an id that does
 * not exist (on `placeholder`, when the check needs the row), so both cases cost the same queries.
 */
export async function visibleOrNothing<T, P = T>(
  find: () => Promise<T | undefined>,
  mayKnow: (row: T | P) => boolean | Promise<boolean>,
  placeholder: P,
): Promise<T | undefined> {
  const found = await find()
  const known = await mayKnow(found ?? placeholder)
  return found !== undefined && known ? found : undefined
}

/** `visibleOrNothing` when the check does not need the row (the id alone decides): both run at once. */
export async function visibleIdOrNothing<T>(
  find: () => Promise<T | undefined>,
  mayKnow: () => boolean | Promise<boolean>,
): Promise<T | undefined> {
  const [found, known] = await Promise.all([find(), mayKnow()])
  return known ? found : undefined
}
