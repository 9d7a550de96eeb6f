import { composedTable } from '../../platform/composition.js'
import type { Db } from '../../platform/db/schema.js'
import { detachFolderReference } from './folders.queries.js'

/**
 * A `table.column` whose rows point at folders. Deleting a folder tree sets these columns to null
 * (contract 20). Content modules list theirs in their `AppModule`'s `folderReferences`
 * (`folderReference('forms')`); each table must have a `tenant_id` column.
 */
export interface FolderReference {
  table: string
  column: string
}

declare module '../../platform/app-module.js' {
  interface AppModule {
    /** Columns of this module's tables that hold folder ids, detached when those folders are deleted. */
    folderReferences?: FolderReference[]
  }
}

/** A `table.column` that holds folder ids (`folder_id` unless told). */
export const folderReference = (table: string, column = 'folder_id'): FolderReference => ({ table, column })

const references = composedTable((modules) => {
  const all: FolderReference[] = []
  for (const { table, column } of modules.flatMap((module) => module.folderReferences ?? []))
    if (!all.some((r) => r.table === table && r.column === column)) all.push({ table, column })
  return all
})

/** Sets every registered reference to one of `folderIds` to null; returns the detached rows per table. */
export async function detachFolderReferences(
  trx: Db,
  tenantId: number,
  folderIds: number[],
): Promise<Record<string, number>> {
  const detached: Record<string, number> = {}
  if (folderIds.length === 0) return detached
  for (const { table, column } of references()) {
    detached[`${table}.${column}`] = await detachFolderReference(trx, tenantId, { table, column }, folderIds)
  }
  return detached
}
