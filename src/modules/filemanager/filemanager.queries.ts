import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import type { QuotaCounter } from '../../platform/limits/quotas.js'

/** Whether a directory still holds a directory or a file. */
export async function directoryHoldsAnything(db: Db, tenantId: number, directoryId: number): Promise<boolean> {
  const { rows } =
    await sql`select 1 from filemanager_directories where tenant_id = ${tenantId} and parent_id = ${directoryId}
      union all select 1 from filemanager_files where tenant_id = ${tenantId} and directory_id = ${directoryId} limit 1`.execute(
      db,
    )
  return rows.length > 0
}

/**
 * The stored bytes quota: a file's own bytes and its poster's (posters are stored beside it, up to
 * 5 MiB each), summed as a bigint (docs/limits.md).
 */
export const fileBytesQuota: QuotaCounter = {
  name: 'file_bytes',
  used: (tenantId) =>
    sql`(select coalesce(sum(size + poster_size), 0) from filemanager_files where tenant_id = ${tenantId})`,
  bytes: true,
}
