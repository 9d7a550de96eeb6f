/**
 * `npm run bench [-- --quick]` — contract 90's harness: fresh database, set-based seed, the API server
 * and the raw baseline server as separate processes, autocannon (another process) alternating each
 * scenario with its baseline, ratios and pass/fail, results in bench/results/<timestamp>.{json,md}.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { openDatabase } from '../src/platform/db/database.js'
import { ensureDatabase, startEmbeddedPostgres } from '../src/platform/db/embedded-postgres.js'
import { migrateToLatest } from '../src/platform/db/migrate.js'
import { seedTenant, type SeededTenant } from './seed.js'
import { scenarios, type Scenario } from './scenarios.js'

const root = path.resolve(import.meta.dirname, '..')
const quick = process.argv.includes('--quick')
const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7).split(',')
const scale = quick ? 0.01 : 1
const duration = quick ? 3 : 10
const warmup = quick ? 1 : 3
const connections = 50

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

async function waitFor(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`${url} did not become ready`)
}

function start(command: string, args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] })
  return child
}

interface LoadResult { rps: number; p50: number; p99: number; errors: number; non2xx: number }

/** Runs autocannon in its own process so that load generation does not share the server's event loop. */
async function load(url: string, options: { method?: string; body?: string; headers?: Record<string, string>; seconds: number }): Promise<LoadResult> {
  const args = ['-c', String(connections), '-d', String(options.seconds), '-j', '-m', options.method ?? 'GET']
  for (const [k, v] of Object.entries(options.headers ?? {})) args.push('-H', `${k}=${v}`)
  if (options.body) args.push('-b', options.body, '-H', 'content-type=application/json')
  args.push(url)
  const child = spawn(path.join(root, 'node_modules/.bin/autocannon'), args, { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] })
  let out = ''
  child.stdout!.on('data', (d) => (out += d))
  await new Promise((r) => child.on('close', r))
  const json = JSON.parse(out)
  return { rps: json.requests.average, p50: json.latency.p50, p99: json.latency.p99, errors: json.errors + json.timeouts, non2xx: json.non2xx }
}

function rssMb(pid: number): Promise<number> {
  return fs.readFile(`/proc/${pid}/status`, 'utf8').then((s) => Number(/VmRSS:\s+(\d+)/.exec(s)?.[1] ?? 0) / 1024, () => 0)
}

async function main(): Promise<void> {
  const startedAt = new Date()
  const database = `wp_bench_${randomBytes(4).toString('hex')}`
  let url: string
  let stopDb = async () => {}
  if (process.env.DATABASE_URL) {
    const u = new URL(process.env.DATABASE_URL)
    u.pathname = `/${database}`
    await ensureDatabase(u.toString(), database)
    url = u.toString()
  } else {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-bench-'))
    const server = await startEmbeddedPostgres(dir, database)
    url = server.url
    stopDb = async () => { await server.stop(); await fs.rm(dir, { recursive: true, force: true }) }
  }
  const handle = await openDatabase({ url, dataDir: '' })
  await migrateToLatest(handle.db, handle.pool)
  console.log(`# seeding (${quick ? 'quick: 1/100' : 'full'} size)…`)
  const seedStart = Date.now()
  const tenants: Record<string, SeededTenant> = {}
  tenants.big = await seedTenant(handle.db, 'big', scale)
  tenants.big2 = await seedTenant(handle.db, 'big-two', scale)
  if (!quick) tenants.small = await seedTenant(handle.db, 'small', 0.01)
  const seedSeconds = (Date.now() - seedStart) / 1000
  console.log(`# seeded in ${seedSeconds.toFixed(1)} s`, tenants.big.counts)

  const apiPort = await freePort()
  const basePort = await freePort()
  const api = start(process.execPath, ['bin/workplace.js', 'serve'], { DATABASE_URL: url, PORT: String(apiPort), WORKER: 'false', LOG_LEVEL: 'warn', NODE_ENV: 'production' })
  const baseline = start(process.execPath, ['--import', 'tsx', 'bench/baseline-server.ts'], { DATABASE_URL: url, PORT: String(basePort) })
  const apiUrl = `http://127.0.0.1:${apiPort}`
  const baseUrl = `http://127.0.0.1:${basePort}`
  await waitFor(`${apiUrl}/health/ready`)
  await waitFor(`${baseUrl}/floor`)

  const rows: Array<Record<string, unknown>> = []
  const measure = async (scenario: Scenario, tenant: SeededTenant, label: string) => {
    const request = await scenario.request(tenant, handle.db)
    const baseRequest = await scenario.baseline(tenant, handle.db)
    const probe = await fetch(apiUrl + request.path, { method: request.method ?? 'GET', headers: { ...request.headers, ...(request.body ? { 'content-type': 'application/json' } : {}) }, body: request.body })
    if (probe.status === 404 && (await probe.text()).includes('No route')) {
      rows.push({ id: label, request: scenario.title, status: 'n/a (route not built yet)' })
      return
    }
    await load(apiUrl + request.path, { ...request, seconds: warmup })
    await load(baseUrl + baseRequest.path, { ...baseRequest, seconds: warmup })
    // alternate API and baseline twice so that machine noise hits both alike; keep the better run of each
    const apiRuns = [await load(apiUrl + request.path, { ...request, seconds: duration / 2 })]
    const baseRuns = [await load(baseUrl + baseRequest.path, { ...baseRequest, seconds: duration / 2 })]
    apiRuns.push(await load(apiUrl + request.path, { ...request, seconds: duration / 2 }))
    baseRuns.push(await load(baseUrl + baseRequest.path, { ...baseRequest, seconds: duration / 2 }))
    const a = apiRuns.sort((x, y) => y.rps - x.rps)[0]
    const b = baseRuns.sort((x, y) => y.rps - x.rps)[0]
    const ratio = a.rps / b.rps
    const errors = apiRuns.reduce((s, r) => s + r.errors + r.non2xx, 0)
    rows.push({
      id: label, request: scenario.title, rps: Math.round(a.rps), p50: a.p50, p99: a.p99, errors, baseline_rps: Math.round(b.rps),
      ratio: Number(ratio.toFixed(2)), target: scenario.target, pass: ratio >= scenario.target && errors === 0,
    })
    console.log(`${label.padEnd(10)} ${String(Math.round(a.rps)).padStart(7)} req/s  p50 ${a.p50} ms  p99 ${a.p99} ms  errors ${errors}  baseline ${Math.round(b.rps)}  ratio ${ratio.toFixed(2)} (target ${scenario.target})`)
  }

  const floor = await load(`${apiUrl}/health/live`, { seconds: duration / 2 })
  console.log(`floor      ${Math.round(floor.rps)} req/s (constant JSON, no database)`)
  for (const scenario of scenarios) {
    if (only && !only.includes(scenario.id)) continue
    await measure(scenario, tenants.big, scenario.id)
  }
  if (tenants.small) {
    for (const scenario of scenarios.filter((s) => s.scaling)) {
      if (only && !only.includes(scenario.id)) continue
      await measure(scenario, tenants.small, `${scenario.id}-small`)
      const full = rows.find((r) => r.id === scenario.id)
      const small = rows.find((r) => r.id === `${scenario.id}-small`)
      if (full?.p50 !== undefined && small?.p50 !== undefined) {
        const growth = Number(full.p50) / Math.max(1, Number(small.p50))
        rows.push({ id: `${scenario.id}-scaling`, request: 'full p50 / quick p50', ratio: Number(growth.toFixed(2)), target: '≤ 1.5', pass: growth <= 1.5 })
      }
    }
  }

  // large read: unlimited GET /api/users streams; peak RSS growth of the server
  const before = await rssMb(api.pid!)
  let peak = before
  const poll = setInterval(async () => { peak = Math.max(peak, await rssMb(api.pid!)) }, 50)
  const t0 = Date.now()
  const res = await fetch(`${apiUrl}/api/users`, { headers: { authorization: `Bearer ${tenants.big.adminToken}` } })
  const streamAvailable = res.status === 200
  const reader = res.body!.getReader()
  let firstByte = 0
  let bytes = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    if (!firstByte) firstByte = Date.now() - t0
    bytes += value.length
  }
  clearInterval(poll)
  const streamRow = streamAvailable
    ? { id: 'stream', request: `GET /api/users (no limit, ${tenants.big.counts.users} users)`, first_byte_ms: firstByte, total_ms: Date.now() - t0, bytes, rss_growth_mb: Number((peak - before).toFixed(1)), target: '< 100 MB', pass: peak - before < 100 }
    : { id: 'stream', request: 'GET /api/users (no limit)', status: `n/a (status ${res.status})` }
  rows.push(streamRow)
  console.log(`stream     first byte ${firstByte} ms, ${(bytes / 1e6).toFixed(1)} MB, RSS growth ${(peak - before).toFixed(1)} MB`)
  const finalRss = await rssMb(api.pid!)
  rows.push({ id: 'memory', request: 'server RSS after the run', rss_mb: Math.round(finalRss), target: '< 300 MB', pass: finalRss < 300 })

  api.kill('SIGTERM')
  baseline.kill('SIGTERM')
  await handle.close()
  await stopDb()

  const stamp = startedAt.toISOString().replace(/[:.]/g, '-')
  const dir = path.join(root, 'bench/results')
  await fs.mkdir(dir, { recursive: true })
  const summary = { started_at: startedAt.toISOString(), mode: quick ? 'quick' : 'full', node: process.version, cpus: os.cpus().length, seed_seconds: seedSeconds, floor_rps: Math.round(floor.rps), counts: tenants.big.counts, rows }
  await fs.writeFile(path.join(dir, `${stamp}.json`), JSON.stringify(summary, null, 2))
  const header = '| id | request | req/s | p50 ms | p99 ms | errors | baseline req/s | ratio | target | pass |\n|---|---|---|---|---|---|---|---|---|---|'
  const lines = rows.map((r) => `| ${r.id} | ${r.request} | ${r.rps ?? ''} | ${r.p50 ?? ''} | ${r.p99 ?? ''} | ${r.errors ?? ''} | ${r.baseline_rps ?? ''} | ${r.ratio ?? r.rss_growth_mb ?? r.rss_mb ?? ''} | ${r.target ?? ''} | ${r.pass === undefined ? r.status ?? '' : r.pass ? 'pass' : 'FAIL'} |`)
  const md = `# Benchmark ${summary.mode} — ${summary.started_at}\n\nNode ${process.version}, ${summary.cpus} cores, seed ${seedSeconds.toFixed(1)} s, floor ${summary.floor_rps} req/s.\n\n${header}\n${lines.join('\n')}\n`
  await fs.writeFile(path.join(dir, `${stamp}.md`), md)
  console.log('\n' + md)
  for (const r of rows) if (r.pass !== undefined) console.log(`${r.pass ? 'PASS' : 'FAIL'} ${r.id} ${r.request}`)
}

main().then(() => process.exit(0), (error) => { console.error(error); process.exit(1) })
