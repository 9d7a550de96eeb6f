import pg from 'pg'
import { observePool } from '../../metrics/index.js'
import { REQUIRED_SETTINGS } from './role-settings.js'
import { types } from './type-parsers.js'

/**
 * `session`: every pooled connection is a server session of its own (direct, or a session-mode pooler).
 * `transaction`: `url` is a transaction-mode pooler (PgBouncer): consecutive statements outside a
 * transaction may run on different server connections, so nothing may rely on session state.
 */
export type PoolMode = 'session' | 'transaction'

export interface PoolOptions {
  max?: number
  allowExitOnIdle?: boolean
  /** Commit without waiting for the WAL flush (the job worker's connections, see runtime.ts); session mode only. */
  asynchronousCommit?: boolean
  poolMode?: PoolMode
  /** The `pool` label of its metrics. */
  name?: string
  /**
   * Plan each named statement once per connection, without its parameters' values (session mode only:
   * a transaction-mode pooler gets no startup options and no named statements). Left to itself,
   * PostgreSQL replans a statement on every execution whenever the plan for its values looks cheaper
   * than the generic one, which is always the case for `limit $n`, `= any($array)` and `unnest($array)`:
   * it estimates 10 % of the rows or 10 elements for an unknown value. The request paths are by-key
   * lookups and ordered index scans, where the generic plan is the same plan; replanning cost up to
   * 0.4 ms a statement (decision 0005, third pass).
   */
  genericPlans?: boolean
  /** More settings of each connection (session mode only), e.g. `citus.multi_task_query_log_level`. */
  settings?: Readonly<Record<string, string>>
}

export function createPool(
  url: string,
  {
    max = 20,
    allowExitOnIdle = false,
    asynchronousCommit = false,
    poolMode = 'session',
    name = 'api',
    genericPlans = false,
    settings = {},
  }: PoolOptions = {},
): pg.Pool {
  const startupOptions = Object.entries(REQUIRED_SETTINGS).map(([setting, value]) => `-c ${setting}=${value}`)
  if (asynchronousCommit) startupOptions.push('-c synchronous_commit=off')
  if (genericPlans) startupOptions.push('-c plan_cache_mode=force_generic_plan')
  for (const [setting, value] of Object.entries(settings)) startupOptions.push(`-c ${setting}=${value}`)
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types,
    ...(poolMode === 'session' ? { options: startupOptions.join(' ') } : {}),
    connectionTimeoutMillis: 5_000,
    allowExitOnIdle,
  } as pg.PoolConfig)
  // An idle client losing its connection (database restart) must not crash the process.
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  observePool(pool, name)
  return pool
}
