import { sql } from 'kysely'
import type { Db } from './schema.js'

/**
 * Runs `run` in a transaction whose sorts and hashes may each use `megabytes` of memory (`set local
 * work_mem`; the server's default, 4 MB, stays for every other statement). For a report that
 * aggregates a whole tenant's users: with 4 MB, PostgreSQL sorts 100,000 rows through temporary files
 * instead of hashing them. The setting ends with the transaction, also through PgBouncer's
 * transaction pooling.
 */
export function withWorkMem<T>(db: Db, megabytes: number, run: (trx: Db) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`select set_config('work_mem', ${`${megabytes}MB`}, true)`.execute(trx)
    return run(trx)
  })
}
