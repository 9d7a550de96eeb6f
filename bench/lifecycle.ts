/**
 * Issue 45: the data lifecycle at the bench seed's size (`npm run bench -- --only=lifecycle`; quick: 1/100).
 * - A personal-data export of a user with 100,000 notifications: the worker's build time and its RSS
 *   growth while it streams them into the ZIP (flat memory), the archive's size.
 * - `workplace tenant export` of the whole seeded tenant (rows/s, the process's peak RSS), then
 *   `workplace tenant import` of that archive into a fresh, migrated database (rows/s).
 * - The retention sweep of 1,000,000 read notifications past their period: time, rows/s and the
 *   longest batch (each batch is one statement and transaction: the longest any row lock is held).
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import pino from 'pino'
import { sql } from 'kysely'
import pg from 'pg'
import { loadConfig } from '../src/config.js'
import { createRetentionService } from '../src/modules/retention/index.js'
import type { Db } from '../src/platform/db/schema.js'
import { ensureDatabase } from '../src/platform/db/embedded-postgres.js'
import { entryStream, openZip } from '../src/modules/backups/tenant-archive.js'
import type { SeededTenant } from './seed.js'
import { errorMessage } from './wait.js'
import { startBenchWorker } from './worker.js'

type Row = Record<string, unknown>

export interface LifecycleBenchContext {
  db: Db
  databaseUrl: string
  apiUrl: string
  tenant: SeededTenant
  scale: number
  rssMb: (pid: number) => Promise<number>
}

const root = path.resolve(import.meta.dirname, '..')
const seconds = (ms: number) => Number((ms / 1000).toFixed(1))

/** Runs `bin/workplace.js …args`, sampling its RSS; its time, peak RSS and output. */
async function cli(args: string[], env: Record<string, string>, rssMb: (pid: number) => Promise<number>) {
  const started = Date.now()
  const child = spawn(process.execPath, ['bin/workplace.js', ...args], {
    cwd: root,
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout!.on('data', (d) => (out += d))
  child.stderr!.on('data', (d) => (out += d))
  let peak = 0
  const sampler = setInterval(() => void rssMb(child.pid!).then((mb) => (peak = Math.max(peak, mb))), 100)
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  clearInterval(sampler)
  if (code !== 0) throw new Error(`workplace ${args.join(' ')} exited with ${code}: ${out.slice(-500)}`)
  return { ms: Date.now() - started, peakMb: Math.round(peak), out }
}

async function manifestRows(file: string): Promise<number> {
  const { zip, entries } = await openZip(file)
  let text = ''
  for await (const chunk of await entryStream(zip, entries.get('manifest.json')!)) text += String(chunk)
  zip.close()
  const manifest = JSON.parse(text) as { tables: Record<string, { rows: number }> }
  return Object.values(manifest.tables).reduce((sum, t) => sum + t.rows, 0)
}

async function measureExport(ctx: LifecycleBenchContext, workerPid: number): Promise<Row> {
  const { db, tenant, apiUrl } = ctx
  const count = Math.round(100_000 * ctx.scale)
  await sql`insert into notifications (tenant_id, notifiable_id, type, targetable_type, targetable_id, source_key, read_at, created_at)
    select ${tenant.tenantId}, ${tenant.userId}, 'genericNotification', 'genericNotification', g % 97, 'bench-export-' || g,
      case when g % 3 = 0 then now() end, now() - g * interval '1 second'
    from generate_series(1, ${count}) g`.execute(db)
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from notifications where tenant_id = ${tenant.tenantId} and notifiable_id = ${tenant.userId}`.execute(
    db,
  )
  const headers = { authorization: `Bearer ${tenant.userToken}` }
  const before = await ctx.rssMb(workerPid)
  let peak = before
  const started = Date.now()
  const requested = await fetch(`${apiUrl}/api/users/current/data-export`, { method: 'POST', headers })
  if (requested.status !== 202) throw new Error(`data export: ${requested.status} ${await requested.text()}`)
  const { id } = ((await requested.json()) as { data: { id: number } }).data
  let status = 'pending'
  let size = 0
  while (status === 'pending' && Date.now() - started < 600_000) {
    await new Promise((r) => setTimeout(r, 100))
    peak = Math.max(peak, await ctx.rssMb(workerPid))
    const shown = (await (await fetch(`${apiUrl}/api/data-exports/${id}`, { headers })).json()) as {
      data: { status: string; size: number | null }
    }
    status = shown.data.status
    size = shown.data.size ?? 0
  }
  const buildMs = Date.now() - started
  if (status !== 'ready') throw new Error(`data export ended ${status}`)
  const link = (await (
    await fetch(`${apiUrl}/api/data-exports/${id}/download-link`, { method: 'POST', headers })
  ).json()) as {
    data: { url: string }
  }
  const downloadStarted = Date.now()
  const download = await fetch(`${apiUrl}${new URL(link.data.url).pathname}`)
  const bytes = (await download.arrayBuffer()).byteLength
  const growth = peak - before
  return {
    id: 'export-user',
    request: `personal-data export of a user with ${rows[0]!.n} notifications (worker build, then download)`,
    ms: buildMs,
    download_ms: Date.now() - downloadStarted,
    zip_bytes: size || bytes,
    rss_growth_mb: Number(growth.toFixed(1)),
    target: 'worker RSS growth < 100 MB',
    pass: growth < 100 && bytes > 0,
  }
}

async function measureTenantArchive(ctx: LifecycleBenchContext): Promise<Row[]> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-bench-archive-'))
  const file = path.join(dir, 'tenant.zip')
  const importDatabase = `${new URL(ctx.databaseUrl).pathname.slice(1)}_import`
  const importUrl = new URL(ctx.databaseUrl)
  importUrl.pathname = `/${importDatabase}`
  const storage = path.join(dir, 'storage')
  try {
    const exported = await cli(
      ['tenant', 'export', ctx.tenant.slug, '--to', file],
      { DATABASE_URL: ctx.databaseUrl, STORAGE_DIR: storage },
      ctx.rssMb,
    )
    const rows = await manifestRows(file)
    const bytes = (await fs.stat(file)).size
    await ensureDatabase(importUrl.toString(), importDatabase)
    await cli(['migrate'], { DATABASE_URL: importUrl.toString() }, ctx.rssMb)
    const imported = await cli(
      ['tenant', 'import', file],
      { DATABASE_URL: importUrl.toString(), STORAGE_DIR: path.join(dir, 'imported-storage') },
      ctx.rssMb,
    )
    return [
      {
        id: 'tenant-export',
        request: `workplace tenant export (${rows} rows, ${(bytes / 1e6).toFixed(0)} MB archive)`,
        ms: exported.ms,
        rate: Math.round(rows / (exported.ms / 1000)),
        rss_mb: exported.peakMb,
        target: 'peak RSS < 300 MB',
        pass: exported.peakMb < 300,
      },
      {
        id: 'tenant-import',
        request: `workplace tenant import into a fresh database (${rows} rows)`,
        ms: imported.ms,
        rate: Math.round(rows / (imported.ms / 1000)),
        rss_mb: imported.peakMb,
        target: 'peak RSS < 300 MB',
        pass: imported.peakMb < 300,
      },
    ]
  } finally {
    await fs.rm(dir, { recursive: true, force: true })
    const admin = new pg.Client({ connectionString: ctx.databaseUrl })
    await admin.connect()
    await admin.query(`drop database if exists ${admin.escapeIdentifier(importDatabase)} with (force)`).catch(() => {})
    await admin.end()
  }
}

async function measureRetentionSweep(ctx: LifecycleBenchContext): Promise<Row> {
  const { db, tenant } = ctx
  const count = Math.round(1_000_000 * ctx.scale)
  await sql`insert into notifications (tenant_id, notifiable_id, type, targetable_type, targetable_id, source_key, read_at, created_at)
    select ${tenant.tenantId}, ${tenant.userId}, 'genericNotification', 'genericNotification', g % 97, 'bench-old-' || g,
      now() - interval '400 days', now() - interval '401 days'
    from generate_series(1, ${count}) g`.execute(db)
  await sql`analyze notifications`.execute(db)
  const retention = createRetentionService({ db, config: loadConfig(), log: pino({ level: 'silent' }) })
  let longest = 0
  let batches = 0
  const started = Date.now()
  const { removed } = await retention.sweepTenant(tenant.tenantId, {
    onBatch: (_rows, ms) => {
      batches++
      longest = Math.max(longest, ms)
    },
  })
  const ms = Date.now() - started
  const total = Object.values(removed).reduce((a, b) => a + b, 0)
  return {
    id: 'retention-sweep',
    request: `retention sweep: ${removed.notifications_read} old read notifications (${total} rows in all) in ${batches} batches`,
    ms,
    rate: Math.round(total / (ms / 1000)),
    longest_batch_ms: Math.round(longest),
    target: 'longest batch (lock) < 1000 ms',
    pass: removed.notifications_read >= count && longest < 1000,
  }
}

/** The parts `--only` may name one by one (`lifecycle` runs them all). */
export const LIFECYCLE_PARTS = ['export-user', 'tenant-archive', 'retention-sweep'] as const
type LifecyclePart = (typeof LIFECYCLE_PARTS)[number]

export async function measureLifecycle(
  ctx: LifecycleBenchContext,
  parts: readonly LifecyclePart[] = LIFECYCLE_PARTS,
): Promise<Row[]> {
  const rows: Row[] = []
  const part = async (name: LifecyclePart, measure: () => Promise<Row[]>) => {
    if (!parts.includes(name)) return
    try {
      rows.push(...(await measure()))
    } catch (error) {
      rows.push({ id: name, request: name, pass: false, error: errorMessage(error) })
    }
  }
  await part('export-user', async () => {
    const worker = await startBenchWorker(ctx.db, ctx.databaseUrl)
    try {
      return [await measureExport(ctx, worker.process.pid!)]
    } finally {
      await worker.stop()
    }
  })
  await part('tenant-archive', () => measureTenantArchive(ctx))
  await part('retention-sweep', async () => [await measureRetentionSweep(ctx)])
  for (const row of rows)
    console.log(
      `${String(row.id).padEnd(16)} ${row.ms !== undefined ? `${seconds(Number(row.ms))} s` : ''} ${row.rate !== undefined ? `${row.rate} rows/s` : ''} ${row.rss_mb !== undefined ? `${row.rss_mb} MB` : ''}${row.error ? ` ERROR ${String(row.error)}` : ''}`,
    )
  return rows
}
