import type { Logger } from 'pino'
import type { Config } from './config.js'
import {
  applyDatabaseDefaults,
  createPool,
  kyselyOn,
  openDatabase,
  verifySessionSettings,
  type DatabaseHandle,
} from './platform/db/database.js'
import { migrateToLatest } from './platform/db/migrate.js'
import { startWorker } from './platform/jobs/jobs.js'
import type { JobHandlers } from './platform/jobs/jobs.js'
import type { AppDeps } from './platform/app-module.js'
import { appModules } from './modules/index.js'
import { composeApp } from './platform/composition.js'

/**
 * Opens the configured database (embedded when DATABASE_URL is unset) and applies migrations. Migrations
 * run on the direct URL (they take session advisory locks); behind a transaction-mode pooler the pooled
 * connections are then checked for the settings the app needs.
 */
export async function openRuntimeDatabase(
  config: Config,
  log: Logger,
  { migrate = true, requests = false } = {},
): Promise<DatabaseHandle> {
  const handle = await openDatabase({
    url: config.db.url,
    directUrl: config.db.directUrl,
    poolMode: config.db.poolMode,
    dataDir: config.db.dataDir,
    log: (message) => log.debug({ component: 'embedded-postgres' }, message),
    // the connections that serve requests (not the job worker's, not the CLI's): see config.ts
    citusSettings:
      requests && config.db.citusMultiShardLogLevel
        ? { 'citus.multi_task_query_log_level': config.db.citusMultiShardLogLevel }
        : undefined,
  })
  try {
    if (migrate) await migrateOnDirectConnection(handle, log)
    if (handle.poolMode === 'transaction') await verifySessionSettings(handle.pool)
  } catch (error) {
    await handle.close().catch(() => undefined)
    throw error
  }
  return handle
}

async function migrateOnDirectConnection(handle: DatabaseHandle, log: Logger): Promise<void> {
  const direct = handle.directUrl === handle.url ? undefined : createPool(handle.directUrl, { max: 2 })
  const pool = direct ?? handle.pool
  try {
    const applied = await migrateToLatest(direct ? kyselyOn(direct) : handle.db, pool)
    if (applied.length > 0) log.info({ migrations: applied }, 'migrations applied')
    await applyDatabaseDefaults(pool, (message) => log.warn(message))
  } finally {
    await direct?.end()
  }
}

/** Job handlers and cron lines of every module. */
export function collectJobs(deps: AppDeps): { handlers: JobHandlers; cron: string } {
  const handlers: JobHandlers = {}
  const cron: string[] = []
  for (const module of appModules) {
    Object.assign(handlers, module.jobs?.(deps) ?? {})
    cron.push(...(module.cron ?? []))
  }
  return { handlers, cron: cron.join('\n') }
}

/**
 * Starts the job worker with every module's handlers, on connections of its own that commit
 * asynchronously (no WAL flush wait per job step). Nothing is lost by it: every job is idempotent and
 * at-least-once, and a database crash can only lose a WAL-ordered suffix of commits, so a job's
 * completion is never kept without its effects; such a job simply runs again. Jobs are enqueued by
 * the API's own (synchronous) transactions, so no queued work is at risk.
 */
export async function runWorker(handle: DatabaseHandle, deps: AppDeps) {
  composeApp(appModules)
  const pool = createPool(handle.url, {
    max: deps.config.jobs.concurrency + 4,
    asynchronousCommit: true,
    poolMode: handle.poolMode,
    name: 'jobs',
  })
  const jobsDb = kyselyOn(pool, handle.poolMode)
  const { handlers, cron } = collectJobs({ ...deps, db: jobsDb, databaseUrl: deps.databaseUrl ?? handle.directUrl })
  const runner = await startWorker({
    pool,
    directUrl: handle.directUrl,
    poolMode: handle.poolMode,
    handlers,
    cron: cron || undefined,
    log: deps.log,
    concurrency: deps.config.jobs.concurrency,
    localQueueSize: deps.config.jobs.localQueueSize,
  })
  void runner.promise.finally(() => jobsDb.destroy()).catch(() => undefined)
  return runner
}
