import { EventEmitter } from 'node:events'
import pg from 'pg'
import type { WorkerEvents } from 'graphile-worker'

/** How often locks of dead workers are looked for; and how old a lock must be to be considered. */
const SWEEP_INTERVAL_MS = 5_000
const MIN_LOCK_AGE = '3 seconds'

export interface WorkerLiveness {
  events: WorkerEvents
  stop(): Promise<void>
}

/**
 * Crash recovery for graphile-worker: a killed worker (SIGKILL, OOM, lost machine) leaves its job
 * locked for four hours. Each live worker holds a session advisory lock keyed by its worker id on a
 * dedicated connection, which PostgreSQL releases when the process dies. A periodic sweep (from any
 * worker process) finds jobs locked by a worker whose advisory lock is free and unlocks them, so they
 * run again within seconds. Jobs are idempotent (at-least-once), so a false positive after a lost
 * liveness connection only repeats a job.
 */
export async function startWorkerLiveness(
  url: string,
  pool: pg.Pool,
  log: { warn(obj: object, msg: string): void } = console,
): Promise<WorkerLiveness> {
  const events = new EventEmitter() as WorkerEvents
  const workerIds = new Set<string>()
  let client: pg.Client | undefined
  let stopped = false

  const lockKey = 'hashtextextended($1, 0)'
  // one query at a time on the liveness connection
  let queue: Promise<unknown> = Promise.resolve()
  const onClient = (text: string, id: string) => {
    queue = queue.then(() => client?.query(text, ['graphile-worker:' + id])).catch(() => undefined)
    return queue
  }
  async function connect(): Promise<void> {
    const next = new pg.Client({ connectionString: url })
    next.on('error', () => {
      if (client === next) client = undefined
    })
    await next.connect()
    for (const id of workerIds) await next.query(`select pg_advisory_lock(${lockKey})`, ['graphile-worker:' + id])
    client = next
  }
  async function hold(id: string): Promise<void> {
    workerIds.add(id)
    await onClient(`select pg_advisory_lock(${lockKey})`, id)
  }
  // jobs are locked by a worker id, or by the pool id when the pool fetches for its workers
  events.on('pool:create', ({ workerPool }) => {
    void hold(workerPool.id)
  })
  events.on('pool:release', ({ workerPool }) => {
    workerIds.delete(workerPool.id)
    void onClient(`select pg_advisory_unlock(${lockKey})`, workerPool.id)
  })
  events.on('worker:create', ({ worker }) => {
    void hold(worker.workerId)
  })
  events.on('worker:release', ({ worker }) => {
    workerIds.delete(worker.workerId)
    void onClient(`select pg_advisory_unlock(${lockKey})`, worker.workerId)
  })

  async function sweep(): Promise<void> {
    if (!client) await connect()
    const { rows } = await pool.query<{ locked_by: string }>(
      `select distinct locked_by from graphile_worker._private_jobs where locked_by is not null and locked_at < now() - interval '${MIN_LOCK_AGE}'`,
    )
    const dead: string[] = []
    for (const { locked_by: id } of rows) {
      if (workerIds.has(id)) continue
      // probe and release in ONE statement: through a transaction-mode pooler two statements may run on
      // two server connections, and the probe's session lock would stay behind on the first
      const {
        rows: [probe],
      } = await pool.query<{ free: boolean }>(
        `select case when pg_try_advisory_lock(${lockKey}) then pg_advisory_unlock(${lockKey}) else false end as free`,
        ['graphile-worker:' + id],
      )
      if (probe.free) dead.push(id)
    }
    if (dead.length > 0) {
      await pool.query('select graphile_worker.force_unlock_workers($1::text[])', [dead])
      log.warn({ workers: dead }, 'unlocked the jobs of dead workers')
    }
  }
  const run = () => sweep().catch(() => undefined)
  await connect().catch(() => undefined)
  await run()
  const timer = setInterval(() => void run(), SWEEP_INTERVAL_MS)
  timer.unref()

  return {
    events,
    async stop() {
      if (stopped) return
      stopped = true
      clearInterval(timer)
      await client?.end().catch(() => undefined)
    },
  }
}
