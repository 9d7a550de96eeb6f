/**
 * `npx tsx bench/limits-cost.ts [rounds=6] [--http] [--concurrency=N] [--requests=N] [--seconds=N]` — the
 * fair-use limiter's per-request cost (decision 0022). One process, an embedded PostgreSQL, the app in this
 * process: `GET /api/users/current` (S1) for a tenant whose limits are raised far above the load (every
 * request runs the whole limiter: budgets, a lease per chunk of up to 200 requests, the headers, the
 * in-flight count) and for an exempt tenant (the hook only looks its limits up), in rounds whose order
 * swaps every round. By `inject` (`requests` per round, `concurrency` at a time, default 1), or with
 * `--http` over the loopback by autocannon in its own process (`seconds` per round, 50 connections, as
 * the bench's S1). Prints the medians, per request, of this process's CPU time (the server's cost, what the
 * limiter adds to it), of the wall time, and of the machine's CPU time (PostgreSQL and the load
 * generator included: autocannon parses every header in JavaScript on the same cores), their
 * differences, and the leases taken.
 */
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/platform/db/database.js'
import { startEmbeddedPostgres } from '../src/platform/db/embedded-postgres.js'
import { migrateToLatest } from '../src/platform/db/migrate.js'
import { createTenant } from '../src/modules/tenants/index.js'
import { writeTenantLimits } from '../src/platform/limits/tenant-limits.js'
import { createRateLimiter } from '../src/platform/limits/rate-limiter.js'
import { limitHeaders } from '../src/platform/limits/index.js'
import { median } from './stats.js'
import { load } from './load.js'

const option = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback)
const rounds = Number(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 6)
const overHttp = process.argv.includes('--http')
const requests = option('requests', 5000)
/** Requests in flight at once by `inject` (1: one after the other; the bench's S1 keeps 50). */
const concurrency = option('concurrency', 1)
const seconds = option('seconds', 3)

/** The machine's CPU time spent busy so far, in ms (every core: this process, PostgreSQL, anything else). */
function machineBusyMs(): number {
  return os.cpus().reduce((sum, cpu) => sum + cpu.times.user + cpu.times.nice + cpu.times.sys + cpu.times.irq, 0)
}

const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-limits-cost-'))
const server = await startEmbeddedPostgres(dir, `wp_limits_${randomBytes(3).toString('hex')}`)
try {
  const handle = await openDatabase({ url: server.url, dataDir: '' })
  await migrateToLatest(handle.db, handle.pool)
  const config = loadConfig({
    DATABASE_URL: server.url,
    LOG_LEVEL: 'silent',
    NODE_ENV: 'production',
    AUTH_CACHE: 'true',
  })
  const app = await buildApp({ config, db: handle.db, databaseUrl: server.url })
  await app.ready()
  const tenant = async (slug: string) =>
    createTenant(handle.db, { slug: `${slug}-${randomBytes(3).toString('hex')}`, tokenTtlDays: 30 })
  const limited = await tenant('limited')
  const exempt = await tenant('exempt')
  const huge = { read: 1_000_000_000, write: 1_000_000_000, expensive: 1_000_000_000 }
  await writeTenantLimits(handle.db, limited.tenant.id, { token: huge, tenant: huge, max_in_flight: 100_000 }, false)
  await writeTenantLimits(handle.db, exempt.tenant.id, {}, true)
  const url = overHttp ? `${await app.listen({ host: '127.0.0.1', port: 0 })}/api/users/current` : ''
  /** Requests answered by autocannon (another process) in `seconds`, 50 connections, as S1; throws on a refusal. */
  const loadOverHttp = async (token: string) => {
    const result = await load(url, { seconds, headers: { authorization: `Bearer ${token}` } })
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx, ${result.errors} errors`)
    return result.total
  }
  const byInject = async (token: string) => {
    let sent = 0
    const client = async () => {
      while (sent++ < requests) {
        const res = await app.inject({
          method: 'GET',
          url: '/api/users/current',
          headers: { authorization: `Bearer ${token}` },
        })
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
      }
    }
    await Promise.all(Array.from({ length: concurrency }, client))
    return requests
  }
  /** One round of one side: µs per request of this process's CPU, of wall time, of the machine's CPU. */
  const run = async (token: string) => {
    const machineBefore = machineBusyMs()
    const cpuBefore = process.cpuUsage()
    const start = process.hrtime.bigint()
    const answered = overHttp ? await loadOverHttp(token) : await byInject(token)
    const wall = Number(process.hrtime.bigint() - start) / 1000
    const cpu = process.cpuUsage(cpuBefore)
    return {
      cpu: (cpu.user + cpu.system) / answered,
      wall: wall / answered,
      machine: ((machineBusyMs() - machineBefore) * 1000) / answered,
    }
  }
  await run(limited.token) // warm-up (JIT, actor cache)
  await run(exempt.token)
  type Measure = 'cpu' | 'wall' | 'machine'
  const measured = {
    limited: { cpu: [] as number[], wall: [] as number[], machine: [] as number[] },
    exempt: { cpu: [] as number[], wall: [] as number[], machine: [] as number[] },
  }
  for (let r = 0; r < rounds; r++) {
    // the order swaps every round: whichever runs second finds the caches warmer
    const order = r % 2 === 0 ? (['limited', 'exempt'] as const) : (['exempt', 'limited'] as const)
    for (const side of order) {
      const round = await run(side === 'limited' ? limited.token : exempt.token)
      for (const measure of ['cpu', 'wall', 'machine'] as const) measured[side][measure].push(round[measure])
    }
  }
  const {
    rows: [leases],
  } = await sql<{ used: number; n: number }>`
    select coalesce(sum(used), 0)::int as used, count(*)::int as n from rate_limit_counters where tenant_id = ${limited.tenant.id}`.execute(
    handle.db,
  )
  console.log(
    overHttp
      ? `over HTTP: ${rounds} rounds of ${seconds} s per side, 50 connections (medians, µs per request)`
      : `by inject: ${rounds} rounds of ${requests} requests per side, ${concurrency} in flight (medians, µs per request)`,
  )
  const line = (measure: Measure, title: string) => {
    const l = median(measured.limited[measure])
    const e = median(measured.exempt[measure])
    const rounded = (list: number[]) => list.map((t) => t.toFixed(0)).join(' ')
    console.log(
      `${title.padEnd(42)} limited ${l.toFixed(1)}, exempt ${e.toFixed(1)}: ${(l - e).toFixed(1)} (${(((l - e) / e) * 100).toFixed(1)} %)   rounds ${rounded(measured.limited[measure])} / ${rounded(measured.exempt[measure])}`,
    )
  }
  line('cpu', 'this process (the server) CPU')
  line('wall', 'wall time')
  line('machine', 'machine CPU (PostgreSQL, load generator too)')
  console.log(`lease rows of the limited tenant: ${leases!.n}, requests leased: ${leases!.used}`)
  // the limiter alone, without HTTP: one request's budgets taken (a lease per chunk of up to 200) and its headers built
  const limiter = createRateLimiter(handle.db, { windowSeconds: 60 })
  const budgets = [
    { name: 'token-read', key: 'token:1:read', limit: 1_000_000_000 },
    { name: 'tenant-read', key: 'tenant:read', limit: 1_000_000_000 },
  ]
  let waited = 0
  const alone = async (n: number) => {
    const cpu = process.cpuUsage()
    for (let i = 0; i < n; i++) {
      const taken = limiter.take(limited.tenant.id, budgets)
      if (taken instanceof Promise) waited++
      const decision = taken instanceof Promise ? await taken : taken
      limitHeaders(decision.states, 60)
    }
    const used = process.cpuUsage(cpu)
    return (used.user + used.system) / n
  }
  await alone(20_000)
  const aloneTimes = [await alone(200_000), await alone(200_000), await alone(200_000)]
  console.log(
    `limiter alone (take + headers, the leases' client side included): ${median(aloneTimes).toFixed(2)} µs CPU/request   rounds ${aloneTimes.map((t) => t.toFixed(2)).join(' ')}; ${waited} of 620000 waited for a lease`,
  )
  await app.close()
  await handle.close()
} finally {
  await server.stop()
  await fs.rm(dir, { recursive: true, force: true })
}
