import type pg from 'pg'
import type { Db } from './schema.js'
import { startEmbeddedPostgres } from './embedded-postgres.js'
import { assumeCitus, detectCitus } from './citus.js'
import { createPool, type PoolMode } from './driver/pools.js'
import { kyselyOn } from './driver/kysely-on-pool.js'

/*
 * The door to the driver basement (driver/README.md): code outside platform/db imports the driver's
 * mechanisms from here, never from driver/ itself.
 */
export { timestampText } from './driver/type-parsers.js'
export { createPool, type PoolMode, type PoolOptions } from './driver/pools.js'
export { applyDatabaseDefaults, verifySessionSettings } from './driver/role-settings.js'
export { onCommittedWrites } from './driver/committed-writes.js'
export { preparingPool } from './driver/named-statements.js'
export { executeCompiled, kyselyOn, streamCompiled } from './driver/kysely-on-pool.js'
export { SettlingCursor } from './driver/cursor.js'
export { freezeDefinition, shapedStatement, verifyShapedStatements } from './driver/statement-shapes.js'
export { reserveIds } from './driver/reserved-ids.js'
export { withClause, type CommonTableExpression } from './driver/common-table-expressions.js'
export { conditionReadFirst, insertedRows, type RowsColumn } from './driver/inserted-rows.js'

export interface DatabaseHandle {
  db: Db
  pool: pg.Pool
  /** What the pool connects to (a pooler in `transaction` mode). */
  url: string
  /** A URL with real sessions, for LISTEN, migrations and session advisory locks. */
  directUrl: string
  poolMode: PoolMode
  close(): Promise<void>
}

export interface DatabaseOptions {
  url?: string
  /** Defaults to `url`. */
  directUrl?: string
  poolMode?: PoolMode
  dataDir: string
  poolSize?: number
  log?: (message: string) => void
  /** Settings of the pool's connections on a Citus coordinator only (`citus.multi_task_query_log_level`). */
  citusSettings?: Readonly<Record<string, string>>
}

/** Resolves the connection URLs: the given ones, or a private embedded server in `$DATA_DIR/postgres`. */
export async function resolveDatabaseUrl(
  options: DatabaseOptions,
): Promise<{ url: string; directUrl: string; stop: () => Promise<void> }> {
  if (options.url) return { url: options.url, directUrl: options.directUrl ?? options.url, stop: async () => {} }
  const server = await startEmbeddedPostgres(options.dataDir, 'workplace', options.log)
  return { url: server.url, directUrl: server.url, stop: () => server.stop() }
}

/** Opens Kysely on the resolved PostgreSQL; `close` ends the pool and stops an embedded server we started. */
export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  const { url, directUrl, stop } = await resolveDatabaseUrl(options)
  const poolMode = options.url ? (options.poolMode ?? 'session') : 'session'
  // once, at start: on a Citus coordinator the pool plans each execution (Citus cannot make a
  // distributed plan of some generic ones: a parameter in a select-list subquery, docs/citus.md)
  const citus = options.url ? await detectCitus(url) : (assumeCitus(false), false)
  const settings = citus && options.citusSettings ? options.citusSettings : {}
  const pool = createPool(url, { max: options.poolSize, poolMode, genericPlans: !citus, settings })
  const db = kyselyOn(pool, poolMode)
  return {
    db,
    pool,
    url,
    directUrl,
    poolMode,
    async close() {
      await db.destroy()
      await stop()
    },
  }
}
