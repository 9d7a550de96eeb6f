import pg from 'pg'
import { createPool, kyselyOn, openDatabase } from '../../src/platform/db/database.js'
import { ensureDatabase } from '../../src/platform/db/embedded-postgres.js'
import { migrateToLatest } from '../../src/platform/db/migrate.js'
import type { Db } from '../../src/platform/db/schema.js'
import { capturingPool, inRequestScope } from './routable-statements.js'
import { assumeCitus } from '../../src/platform/db/citus.js'
import { createCitusDatabase, dropCitusDatabase, citusWorkers, onCitusCluster, requestGuardedPool } from './citus.js'

let shared: { db: Db; pool: ReturnType<typeof createPool> } | undefined

export function testDatabaseUrl(): string {
  const url = process.env.TEST_DB_URL
  if (!url)
    throw new Error('TEST_DB_URL is not set: run the tests with `npm test` (test/run-tests.ts prepares the database)')
  return url
}

/** One pool per test process, on the migrated test database. */
export function testDb(): Db {
  if (!shared) {
    // planned as the app's own pool plans (openDatabase): generic plans on a single node, custom on
    // Citus, where a statement of a request of the test app that goes to more than one shard fails
    // (test:citus; the tests' own statements may span tenants)
    assumeCitus(onCitusCluster)
    const pool = createPool(testDatabaseUrl(), { max: 10, allowExitOnIdle: true, genericPlans: !onCitusCluster })
    shared = {
      pool,
      db: kyselyOn(capturingPool(requestGuardedPool(pool, inRequestScope), process.env.STATEMENT_LOG_DIR)),
    }
  }
  return shared.db
}

export async function closeTestDb(): Promise<void> {
  if (shared) await shared.db.destroy()
  shared = undefined
}

/** Drops `database` on the server of `url` (connections to it are ended). */
export async function dropDatabase(url: string, database: string): Promise<void> {
  const admin = new URL(url)
  admin.pathname = '/postgres'
  const client = new pg.Client({ connectionString: admin.toString() })
  await client.connect()
  await client.query(`drop database if exists ${client.escapeIdentifier(database)} with (force)`).catch(() => undefined)
  await client.end()
}

/**
 * A migrated database of its own on the test server, for a server process whose job worker must not
 * run (or be disturbed by) the jobs of test files running at the same time; `close` drops it.
 */
export async function privateTestDatabase(suffix: string): Promise<{ url: string; db: Db; close(): Promise<void> }> {
  const url = new URL(testDatabaseUrl())
  const name = `${url.pathname.slice(1)}_${suffix}`
  url.pathname = `/${name}`
  if (onCitusCluster) {
    // on every node of the cluster, migrated and distributed (test/helpers/citus.ts)
    const workers = await citusWorkers(testDatabaseUrl())
    await dropCitusDatabase(testDatabaseUrl(), name, workers)
    await createCitusDatabase(testDatabaseUrl(), name)
  } else await ensureDatabase(url.toString(), name)
  const handle = await openDatabase({ url: url.toString(), dataDir: '' })
  await migrateToLatest(handle.db, handle.pool)
  return {
    url: url.toString(),
    db: handle.db,
    async close() {
      await handle.close()
      if (onCitusCluster) await dropCitusDatabase(testDatabaseUrl(), name, await citusWorkers(testDatabaseUrl()))
      else await dropDatabase(url.toString(), name)
    },
  }
}
