import { sql } from 'kysely'
import pg from 'pg'
import type { Db } from './schema.js'

/**
 * Whether the database this process serves is a Citus coordinator (the `citus` extension is
 * installed), detected once at start by `openDatabase` (docs/citus.md, "Two forms"). The code then takes
 * the forms Citus plans where the single node's fast forms fail on it: custom plans instead of
 * `plan_cache_mode=force_generic_plan`, and the writes that ride in one statement split where Citus
 * cannot route them.
 */
let citus = false

/** The database served is a Citus coordinator (see `detectCitus`). */
export const onCitus = (): boolean => citus

/** Asks the database of `url` once whether `citus` is installed, and remembers the answer for `onCitus`. */
export async function detectCitus(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
  await client.connect()
  try {
    const { rows } = await client.query<{ citus: boolean }>(
      "select exists (select 1 from pg_extension where extname = 'citus') as citus",
    )
    citus = rows[0]!.citus
    return citus
  } finally {
    await client.end().catch(() => undefined)
  }
}

/**
 * Runs a statement meant to span tenants, sent while serving a request (the tenant of an old-format
 * token), where a connection may refuse statements sent to more than one shard
 * (`CITUS_MULTI_SHARD_LOG_LEVEL`): on Citus in a transaction with the guard off for it alone
 * (docs/citus.md, "Statements that span tenants"); elsewhere as it is.
 */
export async function spanningTenants<T>(db: Db, run: (db: Db) => Promise<T>): Promise<T> {
  if (!citus) return run(db)
  return db.transaction().execute(async (trx) => {
    await sql`set local citus.multi_task_query_log_level = off`.execute(trx)
    return run(trx)
  })
}

/** For the tests: the answer `detectCitus` would give, without asking. */
export function assumeCitus(on: boolean): void {
  citus = on
}
