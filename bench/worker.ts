/**
 * The job worker for the fan-out and webhook measurements: a separate `workplace worker` process on
 * the bench database, started only for them so that the scenario numbers are unaffected.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { sql } from 'kysely'
import type { Db } from '../src/platform/db/schema.js'
import { pollUntil } from './wait.js'

const root = path.resolve(import.meta.dirname, '..')

export interface BenchWorker {
  process: ChildProcess
  stop(): Promise<void>
}

/**
 * Starts `node bin/workplace.js worker` and resolves once it has run a probe job (so startup and
 * the backlog queued meanwhile are not part of any measurement). Outbound webhooks may reach
 * 127.0.0.1 (the bench receiver). `WORKER_CONCURRENCY` is inherited from the bench's environment.
 */
export async function startBenchWorker(db: Db, databaseUrl: string): Promise<BenchWorker> {
  const child = spawn(process.execPath, ['bin/workplace.js', 'worker'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      PUSH_ALLOW_PRIVATE_NETWORKS: 'true',
      NOTIFICATION_RETENTION_DAYS: '',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const worker: BenchWorker = {
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
    },
  }
  try {
    await waitForProbeJob(db, child)
  } catch (error) {
    await worker.stop()
    throw error
  }
  return worker
}

/** Queues a no-op job (the retention purge, a no-op while retention is unset) and waits until it is gone. */
async function waitForProbeJob(db: Db, child: ChildProcess): Promise<void> {
  const { rows } = await sql<{
    id: string
  }>`select id from graphile_worker.add_job('notifications:purge_read', '{}'::json)`.execute(db)
  const probeId = rows[0].id
  const outcome = await pollUntil(
    async () => {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`the worker exited (${child.exitCode ?? child.signalCode})`)
      const { rows: left } = await sql<{
        n: number
      }>`select count(*)::int as n from graphile_worker.jobs where id = ${probeId}`.execute(db)
      return left[0].n
    },
    (n) => n === 0,
    { intervalMs: 50, timeoutMs: 60_000 },
  )
  if (!outcome.done) throw new Error('the worker did not run a probe job within 60 s')
}

/** Waits until no job is due (so one measurement's follow-up jobs do not run during the next). */
export async function waitForIdleQueue(db: Db, timeoutMs = 60_000): Promise<boolean> {
  const outcome = await pollUntil(
    async () => {
      const { rows } = await sql<{
        n: number
      }>`select count(*)::int as n from graphile_worker.jobs where run_at <= now() and attempts < max_attempts`.execute(
        db,
      )
      return rows[0].n
    },
    (n) => n === 0,
    { intervalMs: 50, timeoutMs },
  )
  return outcome.done
}
