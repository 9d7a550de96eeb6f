type CommitListener = (tables: ReadonlySet<string>) => void
// listeners added at run time by in-process caches (never at import), removed by their returned function
const commitListeners = new Set<CommitListener>()

/**
 * Calls `listener` with the tables a statement of this process wrote, once that write is committed
 * (after `commit`, or right away outside a transaction). In-process caches use it to invalidate
 * synchronously: the client that made the change sees it on its very next request. Changes made by
 * other processes reach them through NOTIFY instead.
 */
export function onCommittedWrites(listener: CommitListener): () => void {
  commitListeners.add(listener)
  return () => commitListeners.delete(listener)
}

export function notifyCommitted(tables: ReadonlySet<string>): void {
  if (tables.size > 0) for (const listener of commitListeners) listener(tables)
}
