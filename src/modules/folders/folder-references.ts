import { composedTable } from '../../platform/composition.js'
import type { Db } from '../../platform/db/schema.js'
import { recordSyncWrites } from '../../platform/sync/change-log.js'
import { detachFolderReference } from './folders.queries.js'

/**
 * A `table.column` whose rows point at folders. Deleting a folder tree sets these columns to null
 * (contract 20). Content modules list theirs in their `AppModule`'s `folderReferences`
 * (`folderReference('forms')`); each table must have a `tenant_id` column.
 */
export interface FolderReference {
  table: string
  column: string
  /** The change feed's entity of the rows (`form`): a detached row is a change offline clients must fetch. */
  syncedAs?: string
}

declare module '../../platform/app-module.js' {
  interface AppModule {
    /** Columns of this module's tables that hold folder ids, detached when those folders are deleted. */
    folderReferences?: FolderReference[]
  }
}

/** A `table.column` that holds folder ids (`folder_id` unless told). */
export const folderReference = (table: string, column = 'folder_id', syncedAs?: string): FolderReference => ({
  table,
  column,
  ...(syncedAs ? { syncedAs } : {}),
})

const references = composedTable((modules) => {
  const all: FolderReference[] = []
  for (const reference of modules.flatMap((module) => module.folderReferences ?? []))
    if (!all.some((r) => r.table === reference.table && r.column === reference.column)) all.push(reference)
  return all
})

/**
 * Sets every registered reference to one of `folderIds` to null; returns the number of detached rows
 * per table. The detached rows of synced entities are recorded as changes (their data changed, without
 * an event of their own), so an offline client does not keep the deleted folder's id.
 */
export async function detachFolderReferences(
  trx: Db,
  tenantId: number,
  folderIds: number[],
): Promise<Record<string, number>> {
  const detached: Record<string, number> = {}
  if (folderIds.length === 0) return detached
  const changes = []
  for (const { table, column, syncedAs } of references()) {
    const ids = await detachFolderReference(trx, tenantId, { table, column }, folderIds)
    detached[`${table}.${column}`] = ids.length
    if (syncedAs) changes.push(...ids.map((id) => ({ entity: syncedAs, id })))
  }
  await recordSyncWrites(trx, tenantId, { changes })
  return detached
}
