/**
 * `npx tsx bench/limits-cost.ts [requests]` — the fair-use limiter's per-request cost (decision 0022).
 * One process, an embedded PostgreSQL, the app in-process: `GET /api/users/current` (S1) by `inject`,
 * sequentially, for a tenant whose limits are raised far above the load (every request runs the whole
 * limiter: budgets, leases every 50 requests, headers, the in-flight count) and for an exempt tenant
 * (the hook only looks its limits up), in alternating rounds. Prints µs per request of each, the
 * difference, and the lease statements per request.
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

const requests = Number(process.argv[2] ?? 5000)
const rounds = 4

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
  const run = async (token: string) => {
    const start = process.hrtime.bigint()
    for (let i = 0; i < requests; i++) {
      const res = await app.inject({
        method: 'GET',
        url: '/api/users/current',
        headers: { authorization: `Bearer ${token}` },
      })
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
    }
    return Number(process.hrtime.bigint() - start) / 1000 / requests
  }
  await run(limited.token) // warm-up (JIT, actor cache)
  await run(exempt.token)
  const times = { limited: [] as number[], exempt: [] as number[] }
  for (let r = 0; r < rounds; r++) {
    times.limited.push(await run(limited.token))
    times.exempt.push(await run(exempt.token))
  }
  const {
    rows: [leases],
  } = await sql<{ used: number; n: number }>`
    select coalesce(sum(used), 0)::int as used, count(*)::int as n from rate_limit_counters where tenant_id = ${limited.tenant.id}`.execute(
    handle.db,
  )
  const l = median(times.limited)
  const e = median(times.exempt)
  console.log(`requests per round: ${requests}, rounds: ${rounds} (medians)`)
  console.log(
    `limited (whole limiter): ${l.toFixed(1)} µs/request   rounds ${times.limited.map((t) => t.toFixed(1)).join(' ')}`,
  )
  console.log(
    `exempt (lookup only):    ${e.toFixed(1)} µs/request   rounds ${times.exempt.map((t) => t.toFixed(1)).join(' ')}`,
  )
  console.log(`difference: ${(l - e).toFixed(1)} µs/request (${(((l - e) / e) * 100).toFixed(1)} %)`)
  console.log(`lease rows of the limited tenant: ${leases!.n}, requests leased: ${leases!.used}`)
  // the limiter alone, without HTTP: one request's budgets taken (a lease every 50) and its headers built
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
