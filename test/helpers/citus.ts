/**
 * The test suite on a Citus cluster (`npm run test:citus`, test/run-citus.ts): TEST_CITUS=1 tells the
 * helpers that TEST_DB_URL is a Citus coordinator's database, migrated and distributed
 * (`workplace db distribute`).
 */
import pg from 'pg'
import { openDatabase } from '../../src/platform/db/database.js'
import { distribute, distributionPlan } from '../../src/platform/db/distribute.js'
import { migrateToLatest } from '../../src/platform/db/migrate.js'

/** The suite runs against a Citus coordinator (test:citus). */
export const onCitusCluster = process.env.TEST_CITUS === '1'

/**
 * The setting test:citus gives the API's connections (pools of apps of their own, servers the tests
 * start): a statement of a request that Citus sends to more than one shard fails (docs/citus.md).
 */
export const SINGLE_SHARD_SETTINGS: Readonly<Record<string, string>> = onCitusCluster
  ? { 'citus.multi_task_query_log_level': 'error' }
  : {}

/**
 * A test that cannot hold on Citus for a reason of test mechanics only (it reads a single node's
 * plan, …): the `skip` option of `test(…)`, with the reason printed. Every use is listed in docs/citus.md.
 */
export function skipOnCitus(reason: string): string | false {
  if (!onCitusCluster) return false
  console.log(`skipped on Citus: ${reason}`)
  return `on Citus: ${reason}`
}

const GUARD = 'citus.multi_task_query_log_level'

/**
 * On Citus, the shared test pool (the test app's and the test set-up's): a connection checked out
 * while a request of the test app runs (`inRequest`) has the single-shard guard on, any other (the
 * tests' own set-up and checks) has it off. A no-op on a single PostgreSQL.
 */
export function requestGuardedPool(pool: pg.Pool, inRequest: () => boolean): pg.Pool {
  if (!onCitusCluster) return pool
  const levels = new WeakMap<pg.PoolClient, string>()
  const connect = async () => {
    const client = await pool.connect()
    const wanted = inRequest() ? 'error' : 'off'
    if ((levels.get(client) ?? 'off') !== wanted) {
      try {
        await client.query(`set ${GUARD} = ${wanted}`)
      } catch (error) {
        client.release(error as Error)
        throw error
      }
      levels.set(client, wanted)
    }
    return client
  }
  return new Proxy(pool, {
    get: (target, property, receiver) => (property === 'connect' ? connect : Reflect.get(target, property, receiver)),
  })
}

async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await run(client)
  } finally {
    await client.end()
  }
}

const withDatabase = (url: string, database: string) => {
  const other = new URL(url)
  other.pathname = `/${database}`
  return other.toString()
}

/** The workers registered on the coordinator of `url` (host and port), from its metadata. */
export async function citusWorkers(url: string): Promise<Array<{ host: string; port: number }>> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ nodename: string; nodeport: number }>(
      `select nodename, nodeport from pg_dist_node where groupid <> 0 and noderole = 'primary' order by nodeid`,
    )
    return rows.map((r) => ({ host: r.nodename, port: r.nodeport }))
  })
}

/** The URLs of the coordinator and of each worker: the coordinator's URL with the worker's host and port. */
function clusterNodes(coordinatorUrl: string, workers: Array<{ host: string; port: number }>): string[] {
  return [
    coordinatorUrl,
    ...workers.map((w) => {
      const url = new URL(coordinatorUrl)
      url.hostname = w.host
      url.port = String(w.port)
      return url.toString()
    }),
  ]
}

/**
 * A database of its own on the cluster of `coordinatorUrl` (the coordinator's and every worker's
 * server get it, with the extensions), its workers registered, migrated and distributed as an
 * operator does it (docs/citus.md, steps 2 to 6). Returns its URL on the coordinator.
 */
export async function createCitusDatabase(coordinatorUrl: string, name: string): Promise<string> {
  const workers = await citusWorkers(coordinatorUrl)
  const coordinator = new URL(coordinatorUrl)
  const nodes = clusterNodes(coordinatorUrl, workers)
  for (const node of nodes) {
    await withClient(withDatabase(node, 'postgres'), (c) => c.query(`create database ${c.escapeIdentifier(name)}`))
    await withClient(withDatabase(node, name), (c) =>
      c.query(
        'create extension if not exists citus; create extension if not exists pg_trgm; create extension if not exists pgcrypto',
      ),
    )
  }
  const url = withDatabase(coordinatorUrl, name)
  await withClient(url, async (c) => {
    await c.query('select citus_set_coordinator_host($1, $2::int)', [
      coordinator.hostname,
      Number(coordinator.port || 5432),
    ])
    for (const w of workers) await c.query('select citus_add_node($1, $2::int)', [w.host, w.port])
  })
  const handle = await openDatabase({ url, dataDir: '' })
  try {
    await migrateToLatest(handle.db, handle.pool)
    await distribute(handle.db, await distributionPlan(handle.db), () => {})
  } finally {
    await handle.close()
  }
  return url
}

/** Drops a database of `createCitusDatabase` on the coordinator and every worker. */
export async function dropCitusDatabase(
  coordinatorUrl: string,
  name: string,
  workers: Array<{ host: string; port: number }>,
): Promise<void> {
  const nodes = clusterNodes(coordinatorUrl, workers)
  for (const node of nodes) {
    await withClient(withDatabase(node, 'postgres'), (c) =>
      c.query(`drop database if exists ${c.escapeIdentifier(name)} with (force)`),
    ).catch(() => undefined)
  }
}
