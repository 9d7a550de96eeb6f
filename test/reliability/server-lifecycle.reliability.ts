/**
 * Database outage and graceful shutdown of a real server process (contract 90).
 * Outage: a private embedded PostgreSQL is stopped for 5 s under load: requests fail fast with 503
 * problem+json, and the same server process serves again once the database is back.
 * Shutdown: SIGTERM under load: in-flight requests complete, new connections are refused, the
 * process exits within 10 s and no job is lost.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { sql } from 'kysely'
import { openDatabase } from '../../src/platform/db/database.js'
import { startEmbeddedPostgres } from '../../src/platform/db/embedded-postgres.js'
import { migrateToLatest } from '../../src/platform/db/migrate.js'
import { LOAD_TEST_LIMITS } from '../helpers/build-test-app.js'
import { given } from '../helpers/given.js'
import { privateTestDatabase } from '../helpers/test-database.js'
import { freePort, seedDepartment, waitFor, workplace, type Proc } from './support/processes.js'

interface Sample {
  at: number
  ms: number
  status: number
  type: string
}

async function get(url: string, token: string, timeoutMs = 15_000): Promise<Sample> {
  const started = Date.now()
  try {
    const res = await fetch(url, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(timeoutMs),
    })
    await res.arrayBuffer()
    return { at: started, ms: Date.now() - started, status: res.status, type: res.headers.get('content-type') ?? '' }
  } catch (error) {
    return {
      at: started,
      ms: Date.now() - started,
      status: 0,
      type: String((error as Error).cause ?? (error as Error).name),
    }
  }
}

/** Keeps `concurrency` requests in flight until stopped; returns every sample. */
function load(url: string, token: string, concurrency: number) {
  const samples: Sample[] = []
  let running = true
  const loops = Array.from({ length: concurrency }, async () => {
    while (running) {
      samples.push(await get(url, token))
      await new Promise((r) => setTimeout(r, 5))
    }
  })
  return {
    samples,
    stop: async () => {
      running = false
      await Promise.all(loops)
    },
  }
}

async function stopPostmaster(dataDir: string): Promise<void> {
  const pid = Number((await fs.readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0])
  process.kill(pid, 'SIGINT') // fast shutdown: disconnects every client
  await waitFor(
    'the postmaster to exit',
    async () => {
      try {
        process.kill(pid, 0)
        return false
      } catch {
        return true
      }
    },
    20_000,
    50,
  )
}

test(
  'PostgreSQL stopped for 5 s under load: 503 problem+json fast, then the same process serves again',
  { timeout: 180_000 },
  async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-outage-'))
    let pg = await startEmbeddedPostgres(dataDir, 'outage')
    const pgPort = Number(new URL(pg.url).port)
    let server: Proc | undefined
    try {
      const handle = await openDatabase({ url: pg.url, dataDir: '' })
      await migrateToLatest(handle.db, handle.pool)
      const tenant = await given.tenant(handle.db)
      await handle.close()

      const port = await freePort()
      // 8 clients for 6 s and more, fast 503s included: far above one token's fair-use budget (decision 0023)
      server = workplace('serve', {
        DATABASE_URL: pg.url,
        PORT: String(port),
        WORKER: 'false',
        DATA_DIR: dataDir,
        ...LOAD_TEST_LIMITS,
      })
      const base = `http://127.0.0.1:${port}`
      await waitFor('the server', async () => (await get(`${base}/health/ready`, '')).status === 200, 60_000, 200)

      const traffic = load(`${base}/api/roles`, tenant.adminToken, 8)
      await new Promise((r) => setTimeout(r, 1000))
      await stopPostmaster(dataDir)
      const downAt = Date.now()
      await new Promise((r) => setTimeout(r, 5000))
      const restartAt = Date.now()
      pg = await startEmbeddedPostgres(dataDir, 'outage', undefined, pgPort)
      const upAt = Date.now()
      const recovered = await waitFor(
        'a 200 after the restart',
        async () => traffic.samples.find((s) => s.at >= upAt && s.status === 200),
        30_000,
        50,
      )
      await new Promise((r) => setTimeout(r, 1000))
      await traffic.stop()

      const during = traffic.samples.filter((s) => s.at >= downAt && s.at + s.ms < restartAt)
      const statuses = [...new Set(during.map((s) => s.status))]
      const slowest = Math.max(...during.map((s) => s.ms))
      const recoveryMs = recovered.at + recovered.ms - upAt
      console.log(
        `# outage: ${traffic.samples.length} requests, ${during.length} during the outage (statuses ${statuses.join(',')}, slowest ${slowest} ms); first 200 ${recoveryMs} ms after PostgreSQL was back`,
      )
      if (process.env.RELIABILITY_DEBUG)
        console.log(
          traffic.samples
            .filter((s) => s.at > downAt - 500)
            .map((s) => `${s.at - downAt}+${s.ms}:${s.status}`)
            .join(' '),
          server.output(),
        )
      assert.ok(during.length > 10, 'requests were made during the outage')
      assert.deepEqual(
        statuses,
        [503],
        `during the outage: ${JSON.stringify(during.filter((s) => s.status !== 503).slice(0, 3))}`,
      )
      assert.ok(during.every((s) => s.type === 'application/problem+json'))
      assert.ok(slowest < 6000, `fail fast: the slowest answer took ${slowest} ms`)
      assert.ok(recoveryMs < 10_000, `served again ${recoveryMs} ms after the database came back`)
      assert.equal(server.child.exitCode, null, 'the server process never exited')
      const after = traffic.samples.filter((s) => s.at > recovered.at)
      assert.ok(
        after.every((s) => s.status === 200),
        `after recovery: ${JSON.stringify(after.filter((s) => s.status !== 200).slice(0, 3))}`,
      )
    } finally {
      server?.child.kill('SIGKILL')
      await server?.exited
      await pg.stop().catch(() => undefined)
      await fs.rm(dataDir, { recursive: true, force: true })
    }
  },
)

test(
  'SIGTERM under load: in-flight requests complete, new connections are refused, exit within 10 s, no job lost',
  { timeout: 180_000 },
  async (t) => {
    // a database of its own: this server's worker must not run the jobs of test files running meanwhile
    const database = await privateTestDatabase('shutdown')
    t.after(() => database.close())
    const db = database.db
    const tenant = await given.tenant(db)
    const departmentId = await seedDepartment(db, tenant, 10_000)
    const port = await freePort()
    const server = workplace('serve', {
      DATABASE_URL: database.url,
      PORT: String(port),
      WORKER: 'true',
      LOG_LEVEL: 'info',
    })
    const base = `http://127.0.0.1:${port}`
    try {
      await waitFor(
        'the server',
        async () => (await get(`${base}/health/ready`, '')).status === 200,
        60_000,
        200,
      ).catch((error) => {
        throw new Error(`${error.message}\n${server.output().slice(-3000)}`)
      })
      // work for the worker: a 10,000-recipient fan-out queued right before the signal
      const sent = await fetch(`${base}/api/notifications`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'bye', body: 'x', url: '/x', department_ids: [departmentId] }),
      })
      assert.equal(sent.status, 202)
      // in flight: slow lists of 10,000 users (streamed), plus quick reads
      const inFlight = [
        ...Array.from({ length: 10 }, () => get(`${base}/api/users`, tenant.adminToken, 20_000)),
        ...Array.from({ length: 10 }, () => get(`${base}/api/roles`, tenant.adminToken, 20_000)),
      ]
      await new Promise((r) => setTimeout(r, 250))
      const signalledAt = Date.now()
      server.child.kill('SIGTERM')
      await new Promise((r) => setTimeout(r, 300))
      const late = await get(`${base}/api/roles`, tenant.adminToken, 5000)
      const results = await Promise.all(inFlight)
      const code = await server.exited
      const exitMs = Date.now() - signalledAt
      console.log(
        `# shutdown: ${results.filter((r) => r.status === 200).length}/${results.length} requests answered 200, new request → ${late.status || late.type}, exit ${code} after ${exitMs} ms`,
      )
      // every request the server had started before the signal completes (200); one it had not read yet
      // gets a retryable 503 problem+json or, on a connection not read yet, a reset; none hangs
      const lines = server
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string; time: number; req?: { url: string } })
      const shutdownAt = lines.find((l) => l.msg === 'shutting down')!.time
      const started = lines.filter(
        (l) => l.msg === 'incoming request' && l.time < shutdownAt && /^\/api\/(users|roles)$/.test(l.req!.url),
      ).length
      const completed = results.filter((r) => r.status === 200).length
      console.log(`# shutdown: ${started} requests started before SIGTERM, ${completed} completed with 200`)
      assert.ok(completed >= started, `${started} requests were in flight, ${completed} completed`)
      const bad = results.filter(
        (r) =>
          !(
            r.status === 200 ||
            (r.status === 503 && r.type === 'application/problem+json') ||
            (r.status === 0 && /ECONNRESET|ECONNREFUSED/.test(r.type))
          ),
      )
      assert.deepEqual(bad, [], JSON.stringify(bad.slice(0, 3)))
      assert.ok(late.status === 0 || late.status === 503, `a request after SIGTERM got ${late.status}`)
      assert.ok(exitMs < 10_000, `exited after ${exitMs} ms\n${server.output().slice(-4000)}`)
      assert.equal(code, 0, server.output())

      // no job lost: a job the stopped process still held is released (graceful stop, or the worker
      // liveness sweep for a job that outlived the 5 s budget) and a new worker finishes the fan-out
      const locked = await sql<{
        n: number
      }>`select count(*)::int as n from graphile_worker._private_jobs where locked_by is not null`.execute(db)
      console.log(
        `# shutdown: ${locked.rows[0].n} job(s) still locked by the stopped process (released by the next worker's liveness sweep)`,
      )
      const worker = workplace('worker', { DATABASE_URL: database.url })
      try {
        await waitFor(
          'all 10,000 notifications',
          async () => {
            const row = await db
              .selectFrom('notifications')
              .select(db.fn.countAll().as('n'))
              .where('tenant_id', '=', tenant.id)
              .executeTakeFirstOrThrow()
            return Number(row.n) === 10_000
          },
          60_000,
          200,
        )
      } finally {
        worker.child.kill('SIGKILL')
        await worker.exited
      }
    } finally {
      server.child.kill('SIGKILL')
    }
  },
)
