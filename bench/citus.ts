/**
 * `npm run bench -- --citus [--quick] [--only=S1,S2,…]`: the read and write scenarios also against a
 * Citus coordinator (a coordinator and two workers, scripts/citus.sh; CITUS_URL names a running one's
 * database instead), seeded the same way, in the same run: each scenario's req/s on the single
 * PostgreSQL of the run and on Citus, and Citus / single (docs/citus.md). No target yet. `afterScenarios`
 * measures more on the Citus side (the reach CSV, the publish).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { openDatabase } from '../src/platform/db/database.js'
import type { Db } from '../src/platform/db/schema.js'
import type { Scenario } from './scenarios.js'
import { seedTenant, type SeededTenant } from './seed.js'
import { best } from './stats.js'
import type { Load, LoadResult } from './load.js'
import { pollUntil } from './wait.js'

const root = path.resolve(import.meta.dirname, '..')

export interface CitusRow {
  id: string
  request: string
  single_rps: number
  citus_rps: number
  /** citus / single */
  ratio: number
  citus_p50: number
  single_p50: number
  errors: number
}

export interface CitusBenchOptions {
  scenarios: Scenario[]
  /** The single PostgreSQL side: its API's URL, database and seeded tenant. */
  single: { apiUrl: string; db: Db; tenant: SeededTenant }
  scale: number
  seconds: number
  warmup: number
  rounds: number
  load: Load
  start: (command: string, args: string[], env: Record<string, string>) => ChildProcess
  stop: (child: ChildProcess) => Promise<void>
  freePort: () => Promise<number>
  waitFor: (url: string) => Promise<void>
  /** Measurements beyond the S scenarios on the Citus side (publish, the reach CSV), after them. */
  afterScenarios?: (citus: CitusSide) => Promise<void>
}

/** The Citus side of the run, as the parts beyond the S scenarios need it. */
export interface CitusSide {
  db: Db
  databaseUrl: string
  apiUrl: string
  apiPid: number
  tenant: SeededTenant
}

function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  capture = false,
): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: root,
      env,
      stdio: ['ignore', capture ? 'pipe' : process.stderr, 'inherit'],
    })
    let stdout = ''
    child.stdout?.on('data', (chunk) => (stdout += chunk))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code: code ?? 1, stdout }))
  })
}

async function probe(
  base: string,
  request: { path: string; method?: string; body?: string; headers?: Record<string, string> },
): Promise<number> {
  const res = await fetch(base + request.path, {
    method: request.method ?? 'GET',
    headers: { ...(request.headers ?? {}), ...(request.body ? { 'content-type': 'application/json' } : {}) },
    body: request.body,
    redirect: 'manual',
  })
  await res.arrayBuffer()
  return res.status
}

/**
 * Waits until the API at `base` has drained what a load left queued: its readiness probe (one statement
 * through the same pool) answers quickly twice in a row, at most 30 s. After autocannon stops, an API
 * still works through the requests waiting for a pool connection; the other side's next run would share
 * the two cores with that (seen: the single node's S15 at 124 req/s after the Citus side's warm-up, 2,721
 * in its own run).
 */
async function settle(base: string): Promise<void> {
  let quick = 0
  await pollUntil(
    async () => {
      const started = performance.now()
      const response = await fetch(`${base}/health/ready`).catch(() => undefined)
      await response?.arrayBuffer()
      quick = response?.ok && performance.now() - started < 25 ? quick + 1 : 0
      return quick
    },
    (answeredQuickly) => answeredQuickly >= 2,
    { intervalMs: 100, timeoutMs: 30_000 },
  )
}

export async function measureCitus(options: CitusBenchOptions): Promise<CitusRow[]> {
  let url = process.env.CITUS_URL
  let stopCluster = async () => {}
  if (!url) {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-bench-citus-'))
    stopCluster = async () => {
      await run('bash', ['scripts/citus.sh', 'stop', dir], process.env)
    }
    // durable commits as the single node has them (the test cluster runs with fsync off)
    const started = await run('bash', ['scripts/citus.sh', 'start', dir], { ...process.env, CITUS_FSYNC: 'on' }, true)
    url = /CITUS_URL=(\S+)/.exec(started.stdout)?.[1]
    if (started.code !== 0 || !url) {
      await stopCluster()
      throw new Error('scripts/citus.sh start failed')
    }
  }
  const rows: CitusRow[] = []
  let api: ChildProcess | undefined
  const handle = { close: async () => {} } as { db?: Db; close: () => Promise<void> }
  try {
    for (const args of [['migrate'], ['db', 'distribute']]) {
      const { code } = await run(
        process.execPath,
        ['bin/workplace.js', ...args],
        { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' },
        true,
      )
      if (code !== 0) throw new Error(`workplace ${args.join(' ')} on Citus exited ${code}`)
    }
    const opened = await openDatabase({ url, dataDir: '' })
    Object.assign(handle, { db: opened.db, close: () => opened.close() })
    console.log('# citus: seeding the same tenant on the coordinator…')
    const seedStart = Date.now()
    const tenant = await seedTenant(opened.db, 'big', options.scale)
    console.log(`# citus: seeded in ${((Date.now() - seedStart) / 1000).toFixed(1)} s`, tenant.counts)
    const port = await options.freePort()
    api = options.start(process.execPath, ['bin/workplace.js', 'serve'], {
      DATABASE_URL: url,
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      WORKER: 'false',
      PORT: String(port),
    })
    const citusUrl = `http://127.0.0.1:${port}`
    await options.waitFor(`${citusUrl}/health/ready`)
    for (const scenario of options.scenarios) {
      const single = await scenario.request(options.single.tenant, options.single.db, options.single.apiUrl)
      const citus = await scenario.request(tenant, opened.db, citusUrl)
      // one request to each first: both answer alike, else the row is an error, not a figure
      const [singleStatus, citusStatus] = await Promise.all([
        probe(options.single.apiUrl, single),
        probe(citusUrl, citus),
      ])
      if (singleStatus !== citusStatus) {
        throw new Error(`${scenario.id}: the single node answered ${singleStatus}, Citus ${citusStatus}`)
      }
      // each side with the scenario's own connections (S17: one, a report one person opens at a time)
      const at = { connections: scenario.connections }
      // each run starts once the side before it has drained its queue (settle)
      const onSingle = async (seconds: number) => {
        const result = await options.load(options.single.apiUrl + single.path, { ...single, ...at, seconds })
        await settle(options.single.apiUrl)
        return result
      }
      const onCitus = async (seconds: number) => {
        const result = await options.load(citusUrl + citus.path, { ...citus, ...at, seconds })
        await settle(citusUrl)
        return result
      }
      await onSingle(options.warmup)
      await onCitus(options.warmup)
      const singleRuns: LoadResult[] = []
      const citusRuns: LoadResult[] = []
      for (let i = 0; i < options.rounds; i++) {
        singleRuns.push(await onSingle(options.seconds))
        citusRuns.push(await onCitus(options.seconds))
      }
      const s = best(singleRuns)
      const c = best(citusRuns)
      const redirects = scenario.id === 'S10' || scenario.id === 'S11'
      const row: CitusRow = {
        id: scenario.id,
        request: scenario.title,
        single_rps: Math.round(s.rps),
        citus_rps: Math.round(c.rps),
        ratio: Number((c.rps / s.rps).toFixed(2)),
        single_p50: s.p50,
        citus_p50: c.p50,
        errors: citusRuns.reduce((sum, r) => sum + r.errors + (redirects ? 0 : r.non2xx), 0),
      }
      rows.push(row)
      console.log(
        `citus ${row.id.padEnd(10)} single ${String(row.single_rps).padStart(6)} req/s  citus ${String(row.citus_rps).padStart(6)} req/s  ratio ${row.ratio}  p50 ${row.single_p50} / ${row.citus_p50} ms  errors ${row.errors}`,
      )
    }
    await options.afterScenarios?.({ db: opened.db, databaseUrl: url, apiUrl: citusUrl, apiPid: api.pid!, tenant })
  } finally {
    if (api) await options.stop(api)
    await handle.close()
    await stopCluster()
  }
  return rows
}

export function citusTable(rows: CitusRow[]): string {
  const header =
    '| id | request | single PostgreSQL req/s | Citus req/s | Citus / single | p50 ms single / Citus | Citus errors |\n|---|---|---|---|---|---|---|'
  const lines = rows.map(
    (r) =>
      `| ${r.id} | ${r.request} | ${r.single_rps} | ${r.citus_rps} | ${r.ratio} | ${r.single_p50} / ${r.citus_p50} | ${r.errors} |`,
  )
  return `${header}\n${lines.join('\n')}\n`
}
