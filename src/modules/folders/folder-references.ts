import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'

/**
 * Tables whose rows point at folders. Deleting a folder tree sets these columns to null
 * (contract 20). Content modules add theirs with `registerFolderReference('forms', 'folder_id')`
 * from their index.ts; each table must have a `tenant_id` column.
 */
const references: Array<{ table: string; column: string }> = []

/** Registers a `table.column` that holds folder ids, to be detached when those folders are deleted. */
export function registerFolderReference(table: string, column = 'folder_id'): void {
  if (!references.some((r) => r.table === table && r.column === column)) references.push({ table, column })
}

registerFolderReference('departments')
registerFolderReference('roles')

/** Sets every registered reference to one of `folderIds` to null; returns the detached rows per table. */
export async function detachFolderReferences(
  trx: Db,
  tenantId: number,
  folderIds: number[],
): Promise<Record<string, number>> {
  const detached: Record<string, number> = {}
  if (folderIds.length === 0) return detached
  for (const { table, column } of references) {
    const result = await sql`update ${sql.table(table)} set ${sql.ref(column)} = null
      where tenant_id = ${tenantId} and ${sql.ref(column)} = any(${folderIds}::bigint[])`.execute(trx)
    detached[`${table}.${column}`] = Number(result.numAffectedRows ?? 0)
  }
  return detached
}
