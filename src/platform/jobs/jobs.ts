import { type RawBuilder, sql } from 'kysely'
import { type JobHelpers, Logger, run, type Runner, type Task } from 'graphile-worker'
import type { Logger as PinoLogger } from 'pino'
import pg from 'pg'
import type { PoolMode } from '../db/database.js'
import type { Db } from '../db/schema.js'
import { startWorkerLiveness } from './worker-liveness.js'
import { instrumentJobs } from '../metrics/index.js'

export interface EnqueueOptions {
  /** Jobs with the same key are de-duplicated while pending (graphile-worker job_key). */
  key?: string
  runAt?: Date
  maxAttempts?: number
  queue?: string
}

/**
 * Enqueues a job through `db`, which may be a transaction: the job then commits or rolls back with
 * the state change that caused it (no lost or phantom side effects).
 */
export async function enqueue(db: Db, name: string, payload: unknown, options: EnqueueOptions = {}): Promise<void> {
  await sql`select ${enqueueSql(name, payload, options)}`.execute(db)
}

/** `enqueue` as an SQL call, for a statement that makes it together with other calls (e.g. `publishSql`). */
export function enqueueSql(name: string, payload: unknown, options: EnqueueOptions = {}): RawBuilder<unknown> {
  return sql`graphile_worker.add_job(
    identifier => ${name}::text,
    payload => ${JSON.stringify(payload ?? {})}::json,
    queue_name => ${options.queue ?? null}::text,
    run_at => ${options.runAt ?? null}::timestamptz,
    max_attempts => ${options.maxAttempts ?? null}::int,
    job_key => ${options.key ?? null}::text
  )`
}

/**
 * Deletes the queued jobs of a tenant (payload `tenantId`) that are not running and whose payload has
 * a top-level value equal (case-insensitively) to one of `values`: an erasure removes e.g. a pending
 * password-reset job holding the person's typed email address. A running job finishes; it finds nobody.
 */
export async function deleteQueuedJobsNaming(db: Db, tenantId: number, values: string[]): Promise<void> {
  const lowered = values.filter((v) => v !== '').map((v) => v.toLowerCase())
  if (lowered.length === 0) return
  await sql`delete from graphile_worker._private_jobs j
    where j.locked_at is null and j.payload::jsonb ->> 'tenantId' = ${String(tenantId)}
      and jsonb_typeof(j.payload::jsonb) = 'object'
      and exists (select 1 from jsonb_each_text(j.payload::jsonb) e where lower(e.value) = any(${lowered}::text[]))`.execute(
    db,
  )
}

/** The handler of a job whose payload its enqueuer wrote as a `P` (graphile-worker hands it back parsed from JSON). */
export function jobOf<P>(handler: (payload: P, helpers: JobHelpers) => void | Promise<void>): Task {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- a job's payload is the P its enqueuer wrote
  return (payload, helpers) => handler(payload as P, helpers)
}

/** Job handlers by name (`<module>:<verb>`: graphile-worker's crontab allows no dots); modules contribute them at composition. */
export type JobHandlers = Record<string, Task>

export interface WorkerOptions {
  /** For the jobs' queries (may be a transaction-mode pooler). */
  pool: pg.Pool
  poolMode?: PoolMode
  handlers: JobHandlers
  concurrency: number
  /** Jobs fetched per round trip (graphile-worker local queue); 0 or 1 fetches one at a time. */
  localQueueSize: number
  cron?: string
  /**
   * A URL with real sessions: graphile-worker's LISTEN for new jobs, and crash recovery (jobs of killed
   * workers run again within seconds), which holds session advisory locks.
   */
  directUrl?: string
  /** Where graphile-worker logs go (default: its console logger). */
  log?: PinoLogger
}

/** graphile-worker's log calls as pino lines, so every line a process prints is structured JSON. */
export function pinoWorkerLogger(log: PinoLogger): Logger {
  const worker = log.child({ component: 'worker' })
  return new Logger((scope) => (level, message, meta) => {
    const method = level === 'warning' ? 'warn' : level
    const { error, job, ...rest } = (meta ?? {}) as { error?: unknown; job?: Record<string, unknown> }
    // a job is named by task, id and attempt: its payload (up to 1,000 user ids, webhook bodies) is never logged
    const jobFields = job
      ? { task: job.task_identifier, jobId: job.id, attempt: job.attempts, maxAttempts: job.max_attempts }
      : {}
    worker[method](
      {
        scope,
        ...rest,
        ...jobFields,
        ...(error instanceof Error ? { err: error } : error !== undefined ? { error } : {}),
      },
      message,
    )
  })
}

/** The callback form of `pg.Pool.connect`. */
type ConnectCallback = (
  error: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: unknown) => void,
) => void

/**
 * graphile-worker takes its LISTEN connection with `pgPool.connect(callback)` and every other client
 * with `await pgPool.connect()`. That listener must be a real session (a transaction-mode pooler does
 * not deliver notifications), so the callback form is served by a small pool on the direct URL.
 */
function withDirectListener(pool: pg.Pool, directUrl: string): { pool: pg.Pool; end: () => Promise<void> } {
  const direct = new pg.Pool({ connectionString: directUrl, max: 1 })
  direct.on('error', () => {})
  const connect = (callback?: ConnectCallback) => (callback ? direct.connect(callback) : pool.connect())
  return {
    pool: new Proxy(pool, {
      get: (target, property, receiver) => (property === 'connect' ? connect : Reflect.get(target, property, receiver)),
    }),
    end: () => direct.end(),
  }
}

/** Starts the graphile-worker runner in this process. */
export async function startWorker(options: WorkerOptions): Promise<Runner> {
  const liveness = options.directUrl ? await startWorkerLiveness(options.directUrl, options.pool) : undefined
  const transactionMode = options.poolMode === 'transaction'
  const listener =
    transactionMode && options.directUrl ? withDirectListener(options.pool, options.directUrl) : undefined
  const runner = await run({
    pgPool: listener?.pool ?? options.pool,
    taskList: instrumentJobs(options.handlers),
    concurrency: options.concurrency,
    noHandleSignals: true,
    // a transaction-mode pooler may run a statement's next execution on another server connection
    noPreparedStatements: transactionMode,
    pollInterval: 1000,
    crontab: options.cron,
    events: liveness?.events,
    // jobs fetched (and locked) in batches, completions batched per tick: fewer database round trips per
    // job when many are queued (webhook bursts); a crashed worker's batch is freed by the liveness sweep
    ...(options.localQueueSize > 1
      ? {
          preset: {
            worker: { localQueue: { size: options.localQueueSize }, completeJobBatchDelay: 0, failJobBatchDelay: 0 },
          },
        }
      : {}),
    ...(options.log ? { logger: pinoWorkerLogger(options.log) } : {}),
  })
  void runner.promise.finally(() => Promise.all([liveness?.stop(), listener?.end()])).catch(() => undefined)
  return runner
}

/**
 * Stops a runner within a budget: running jobs get `budgetMs` to finish; after that they are
 * released (failed with a retry, never lost: every job is idempotent), so shutdown ends in time.
 */
export async function stopWorker(runner: Runner, budgetMs = 5_000): Promise<'stopped' | 'released'> {
  let timer: NodeJS.Timeout | undefined
  const budget = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), budgetMs)
  })
  const outcome = await Promise.race([runner.stop().then(() => 'stopped' as const), budget])
  clearTimeout(timer)
  if (outcome === 'stopped') return 'stopped'
  await runner.kill('shutdown: jobs still running after the budget are released for a retry')
  return 'released'
}
