import type { Logger } from 'pino'
import type { Config } from './config.js'
import { createPool, kyselyOn, openDatabase, type DatabaseHandle } from './platform/db/database.js'
import { migrateToLatest } from './platform/db/migrate.js'
import { startWorker } from './platform/jobs/jobs.js'
import type { JobHandlers } from './platform/jobs/jobs.js'
import type { AppDeps } from './platform/app-module.js'
import { appModules } from './modules/index.js'

/** Opens the configured database (embedded when DATABASE_URL is unset) and applies migrations. */
export async function openRuntimeDatabase(config: Config, log: Logger, { migrate = true } = {}): Promise<DatabaseHandle> {
  const handle = await openDatabase({
    url: config.db.url,
    dataDir: config.db.dataDir,
    log: (message) => log.debug({ component: 'embedded-postgres' }, message),
  })
  if (migrate) {
    const applied = await migrateToLatest(handle.db, handle.pool)
    if (applied.length > 0) log.info({ migrations: applied }, 'migrations applied')
  }
  return handle
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
  const pool = createPool(handle.url, { max: deps.config.jobs.concurrency + 4, asynchronousCommit: true, name: 'jobs' })
  const jobsDb = kyselyOn(pool)
  const { handlers, cron } = collectJobs({ ...deps, db: jobsDb })
  const runner = await startWorker({ pool, url: handle.url, handlers, concurrency: deps.config.jobs.concurrency, localQueueSize: deps.config.jobs.localQueueSize, cron: cron || undefined, log: deps.log })
  void runner.promise.finally(() => jobsDb.destroy()).catch(() => undefined)
  return runner
}
