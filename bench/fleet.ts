/**
 * `--fleet`: the read scenarios S1–S4 (a) on one node in transaction pool mode directly on PostgreSQL —
 * the cost of unnamed statements alone — and (b) through HAProxy with two API nodes on PgBouncer in
 * transaction mode (the fleet of test/cluster), each next to the single-process figures of the same run.
 * On two cores the fleet cannot scale: both nodes, PgBouncer, HAProxy, PostgreSQL and autocannon share
 * them, so (b) shows the overhead of the proxy and the pooler, not the gain of more nodes.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import type { Db } from '../src/platform/db/schema.js'
import { Fleet } from '../test/cluster/fleet.js'
import type { Scenario } from './scenarios.js'
import type { SeededTenant } from './seed.js'
import type { Load } from './load.js'

type Row = Record<string, unknown>

export const FLEET_SCENARIOS = ['S1', 'S2', 'S3', 'S4']

export interface FleetContext {
  db: Db
  url: string
  tenant: SeededTenant
  scenarios: Scenario[]
  load: Load
  seconds: number
  warmup: number
  /** The single-process rows of the same run (S1–S4), to compare with. */
  single: Row[]
  freePort: () => Promise<number>
  waitFor: (url: string) => Promise<void>
}

const root = path.resolve(import.meta.dirname, '..')

async function measureOn(ctx: FleetContext, baseUrl: string, suffix: string, label: string): Promise<Row[]> {
  const rows: Row[] = []
  for (const scenario of ctx.scenarios.filter((s) => FLEET_SCENARIOS.includes(s.id))) {
    const request = await scenario.request(ctx.tenant, ctx.db, baseUrl)
    await ctx.load(baseUrl + request.path, { ...request, seconds: ctx.warmup })
    const result = await ctx.load(baseUrl + request.path, { ...request, seconds: ctx.seconds })
    const single = ctx.single.find((r) => r.id === scenario.id)
    const vsSingle = single?.rps ? result.rps / Number(single.rps) : undefined
    rows.push({
      id: `${scenario.id}-${suffix}`,
      request: `${scenario.title} — ${label}`,
      rps: Math.round(result.rps),
      p50: result.p50,
      p99: result.p99,
      errors: result.errors + result.non2xx,
      single_rps: single?.rps,
      single_p99: single?.p99,
      ratio: vsSingle === undefined ? undefined : Number(vsSingle.toFixed(2)),
      target: 'report',
      pass: result.errors + result.non2xx === 0,
    })
    console.log(
      `${`${scenario.id}-${suffix}`.padEnd(12)} ${String(Math.round(result.rps)).padStart(7)} req/s  p99 ${result.p99} ms  errors ${result.errors + result.non2xx}  (single process ${single?.rps ?? '?'} req/s, p99 ${single?.p99 ?? '?'} ms)`,
    )
  }
  return rows
}

export async function measureFleet(ctx: FleetContext): Promise<Row[]> {
  const rows: Row[] = []
  const port = await ctx.freePort()
  const unnamed = spawn(process.execPath, ['bin/workplace.js', 'serve'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      DATABASE_URL: ctx.url,
      DATABASE_POOL_MODE: 'transaction',
      PORT: String(port),
      WORKER: 'false',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
    },
  })
  try {
    await ctx.waitFor(`http://127.0.0.1:${port}/health/ready`)
    rows.push(
      ...(await measureOn(
        ctx,
        `http://127.0.0.1:${port}`,
        'unnamed',
        'one node, DATABASE_POOL_MODE=transaction (unnamed statements), no pooler',
      )),
    )
  } finally {
    unnamed.kill('SIGTERM')
  }
  const fleet = await Fleet.start({ directUrl: ctx.url, apiNodes: 2, workers: 0, env: { LOG_LEVEL: 'warn' } })
  try {
    rows.push(...(await measureOn(ctx, fleet.url, 'fleet', 'HAProxy → 2 nodes → PgBouncer (transaction mode)')))
  } finally {
    await fleet.stop()
  }
  return rows
}
