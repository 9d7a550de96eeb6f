import { type CompiledQuery, Kysely, PostgresDialect } from 'kysely'
import type pg from 'pg'
import type { Database, Db } from '../schema.js'
import { SettlingCursor } from './cursor.js'
import { preparingPool } from './named-statements.js'
import type { PoolMode } from './pools.js'

/**
 * Kysely on a pool (committed-write reports, cursors for streaming; named prepared statements in
 * session mode only: a transaction-mode pooler may run the next execution on a server connection
 * that never saw the statement prepared).
 */
export function kyselyOn(pool: pg.Pool, poolMode: PoolMode = 'session'): Db {
  const preparing = preparingPool(pool, poolMode === 'session')
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparing, cursor: SettlingCursor }) })
  poolsOf.set(db, preparing)
  return db
}

/** The pool a Kysely of `kyselyOn` sends its statements through (named, committed writes reported). */
const poolsOf = new WeakMap<Db, pg.Pool>()

/**
 * Runs a statement compiled beforehand (`shapedStatement`) and returns its rows. On a Kysely of
 * `kyselyOn` it goes straight to a client of the same pool, as Kysely would send it, without Kysely's
 * executor (its connection provider, driver and connection layers cost seven promises and about
 * 5 µs a statement, a tenth of a single read's own Node time); in a transaction, or on any other
 * Kysely, through `executeQuery`.
 */
export async function executeCompiled<R>(db: Db, compiled: CompiledQuery<R>): Promise<R[]> {
  const pool = poolsOf.get(db)
  if (!pool) return (await db.executeQuery(compiled)).rows
  const client = await pool.connect()
  try {
    // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- pg's typings: its values array is only read; the rows are the compiled query's
    return (await client.query(compiled.sql, compiled.parameters as unknown[])).rows as R[]
  } finally {
    client.release()
  }
}

/**
 * Streams the rows of a compiled statement (maybe compiled beforehand: `shapedStatement`) through
 * Kysely's executor, in batches of at most `chunkSize` rows (one cursor read each): a select query
 * builder's `stream` without its one-row-at-a-time iteration, which cost a promise per row.
 */
export async function* streamCompiled<R>(db: Db, compiled: CompiledQuery<R>, chunkSize: number): AsyncGenerator<R[]> {
  // Kysely's plugins key their per-query state by this object (it does not export its own maker)
  for await (const result of db.getExecutor().stream(compiled, chunkSize, { queryId: 'streamCompiled' }))
    yield result.rows
}
