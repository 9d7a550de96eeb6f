import { createHash } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import fs from 'node:fs/promises'
import path from 'node:path'
import { Readable, type Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type pg from 'pg'
import { fileBytes, ident, insertJsonLines, jsonLines } from './archive-entries.js'
import yauzl from 'yauzl'
import yazl from 'yazl'
import { tenantTables } from '../../platform/db/table-classes.js'

/**
 * A tenant's offboarding (issue 45, docs/data-protection.md): `exportTenant` writes one consistent
 * snapshot (one REPEATABLE READ transaction) of every tenant table and the tenant's files into a ZIP,
 * streamed (rows are read through a cursor and written as JSON lines); `importTenant` restores it with
 * the same ids into a database without that tenant; `deleteTenant` removes everything of the tenant.
 */
export const ARCHIVE_FORMAT = 'workplace-tenant-archive/1'

export interface TenantManifest {
  format: string
  schema_version: string
  exported_at: string
  tenant: { id: number; slug: string }
  tables: Record<string, { rows: number; sha256: string }>
  files: Record<string, { bytes: number; sha256: string }>
}

export { ident }

/** Tenant tables in an order where every referenced table comes first (self-references aside). */
export async function tenantTablesInOrder(client: pg.ClientBase): Promise<string[]> {
  return tablesInOrder(client, tenantTables())
}

/** `tables` (of schema public) in an order where every referenced table comes first. */
export async function tablesInOrder(client: pg.ClientBase, tables: string[]): Promise<string[]> {
  const { rows } = await client.query<{ from: string; to: string }>(`
    select c.relname as from, r.relname as to from pg_constraint con
    join pg_class c on c.oid = con.conrelid join pg_class r on r.oid = con.confrelid
    join pg_namespace n on n.oid = c.relnamespace
    where con.contype = 'f' and n.nspname = 'public'`)
  const needs = new Map(tables.map((t) => [t, new Set<string>()]))
  for (const { from, to } of rows) if (from !== to && needs.has(from) && needs.has(to)) needs.get(from)!.add(to)
  const ordered: string[] = []
  const visit = (table: string, path: Set<string>) => {
    if (ordered.includes(table) || path.has(table)) return
    path.add(table)
    for (const dependency of [...needs.get(table)!].sort()) visit(dependency, path)
    ordered.push(table)
  }
  for (const table of [...tables].sort()) visit(table, new Set())
  return ordered
}

export async function primaryKey(client: pg.ClientBase, table: string): Promise<string[]> {
  const { rows } = await client.query<{ column: string }>(
    `select a.attname as column from pg_index i
     join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
     where i.indrelid = $1::regclass and i.indisprimary order by array_position(i.indkey::int2[], a.attnum)`,
    [`public.${table}`],
  )
  return rows.map((r) => r.column)
}

async function tenantFileRoots(storageDir: string, tenantId: number): Promise<string[]> {
  const areas = await fs.readdir(storageDir, { withFileTypes: true }).catch(() => [])
  const roots: string[] = []
  for (const area of areas) {
    if (!area.isDirectory()) continue
    const dir = path.join(area.name, String(tenantId))
    const stat = await fs.stat(path.join(storageDir, dir)).catch(() => undefined)
    if (stat?.isDirectory()) roots.push(dir)
  }
  return roots
}

async function filesUnder(storageDir: string, root: string): Promise<string[]> {
  const entries = await fs.readdir(path.join(storageDir, root), { withFileTypes: true, recursive: true })
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(storageDir, path.join(e.parentPath, e.name)))
    .sort()
}

/** Writes the tenant's archive to `out` and returns its manifest (also the archive's last entry). */
export async function exportTenant(
  pool: pg.Pool,
  storageDir: string,
  slug: string,
  out: Writable,
): Promise<TenantManifest> {
  const client = await pool.connect()
  try {
    await client.query('begin isolation level repeatable read read only')
    const tenant = await client.query<{ id: string; row: string }>(
      'select id, to_jsonb(t)::text as row from tenants t where slug = $1',
      [slug],
    )
    if (tenant.rows.length === 0) throw new Error(`no tenant "${slug}"`)
    const tenantId = Number(tenant.rows[0]!.id)
    const version = await client.query<{ name: string }>('select max(name) as name from kysely_migration')
    const manifest: TenantManifest = {
      format: ARCHIVE_FORMAT,
      schema_version: version.rows[0]!.name,
      exported_at: new Date().toISOString(),
      tenant: { id: tenantId, slug },
      tables: {},
      files: {},
    }
    const zip = new yazl.ZipFile()
    const written = pipeline(zip.outputStream, out)
    const tenantLine = `${tenant.rows[0]!.row}\n`
    manifest.tables.tenants = { rows: 1, sha256: createHash('sha256').update(tenantLine).digest('hex') }
    zip.addBuffer(Buffer.from(tenantLine), 'tables/tenants.jsonl')
    // yazl reads one entry's stream after the other: one cursor open at a time on the snapshot's client
    for (const table of await tenantTablesInOrder(client)) {
      const order = (await primaryKey(client, table)).map(ident).join(', ')
      const lines = jsonLines(
        client,
        `select to_jsonb(t)::text as row from ${ident(table)} t where tenant_id = $1 order by ${order}`,
        [tenantId],
        ({ count, sha256 }) => (manifest.tables[table] = { rows: count, sha256 }),
      )
      zip.addReadStream(Readable.from(lines), `tables/${table}.jsonl`)
    }
    for (const root of await tenantFileRoots(storageDir, tenantId))
      for (const file of await filesUnder(storageDir, root)) {
        const name = file.split(path.sep).join('/')
        const bytes = fileBytes(path.join(storageDir, file), ({ count, sha256 }) => {
          manifest.files[name] = { bytes: count, sha256 }
        })
        zip.addReadStream(Readable.from(bytes), `files/${name}`)
      }
    endWithManifest(zip, manifest)
    await written
    await client.query('commit')
    return manifest
  } catch (error) {
    await client.query('rollback').catch(() => undefined)
    throw error
  } finally {
    client.release()
  }
}

function isManifest(value: unknown): value is TenantManifest {
  if (value === null || typeof value !== 'object') return false
  const field = (key: string): unknown => Reflect.get(value, key)
  return (
    typeof field('format') === 'string' &&
    typeof field('schema_version') === 'string' &&
    typeof field('tenant') === 'object' &&
    typeof field('tables') === 'object' &&
    typeof field('files') === 'object'
  )
}

export function openZip(file: string): Promise<{ zip: yauzl.ZipFile; entries: Map<string, yauzl.Entry> }> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, autoClose: false }, (error, zip) => {
      if (error) return reject(error)
      const entries = new Map<string, yauzl.Entry>()
      zip.on('entry', (entry: yauzl.Entry) => {
        entries.set(entry.fileName, entry)
        zip.readEntry()
      })
      zip.on('end', () => resolve({ zip, entries }))
      zip.on('error', reject)
      zip.readEntry()
    })
  })
}

export const entryStream = (zip: yauzl.ZipFile, entry: yauzl.Entry) =>
  new Promise<Readable>((resolve, reject) =>
    zip.openReadStream(entry, (error, stream) => (error ? reject(error) : resolve(stream))),
  )

/**
 * Adds `manifest.json` as the ZIP's last entry and ends it: the entry is read when every other entry
 * has been written, so the counts and checksums the others fill in are complete.
 */
export function endWithManifest(zip: yazl.ZipFile, manifest: object): void {
  async function* manifestEntry() {
    yield `${JSON.stringify(manifest, null, 2)}\n`
  }
  zip.addReadStream(Readable.from(manifestEntry()), 'manifest.json')
  zip.end()
}

/** The parsed `manifest.json` of a ZIP (`what` names it in the error: "workplace backup", "tenant archive"). */
export async function readManifest(
  zip: yauzl.ZipFile,
  entries: Map<string, yauzl.Entry>,
  what: string,
): Promise<unknown> {
  const entry = entries.get('manifest.json')
  if (!entry) throw new Error(`not a ${what}: manifest.json is missing`)
  let text = ''
  for await (const chunk of await entryStream(zip, entry)) text += String(chunk)
  return JSON.parse(text)
}

/**
 * Writes the manifest's files (`files/<name>` entries) under the storage directory, each checked
 * against its SHA-256; a name leading out of the directory, a missing entry or a mismatch throws
 * (`what` names the ZIP in the message: a backup or an archive). Returns how many were written.
 */
export async function writeEntryFiles(
  zip: yauzl.ZipFile,
  entries: Map<string, yauzl.Entry>,
  files: Record<string, { sha256: string }>,
  storageDir: string,
  what: 'backup' | 'archive',
): Promise<number> {
  let written = 0
  for (const [name, expected] of Object.entries(files)) {
    const entry = entries.get(`files/${name}`)
    if (!entry) throw new Error(`the ${what} has no file ${name}`)
    const target = path.join(storageDir, ...name.split('/'))
    if (!path.resolve(target).startsWith(path.resolve(storageDir) + path.sep)) throw new Error(`unsafe path ${name}`)
    await fs.mkdir(path.dirname(target), { recursive: true })
    const hash = createHash('sha256')
    const source = await entryStream(zip, entry)
    source.on('data', (chunk: Buffer) => hash.update(chunk))
    await pipeline(source, createWriteStream(target, { mode: 0o640 }))
    if (hash.digest('hex') !== expected.sha256) throw new Error(`file ${name}: checksum mismatch (damaged ${what})`)
    written++
  }
  return written
}

/**
 * Restores an archive into this database: the tenant (same id and slug) must not exist. Every table in
 * one transaction, in batches; row counts and checksums are checked against the manifest; the files
 * are written after the commit.
 */
export async function importTenant(
  pool: pg.Pool,
  storageDir: string,
  file: string,
): Promise<{ tenant: TenantManifest['tenant']; tables: Record<string, number>; files: number }> {
  const { zip, entries } = await openZip(file)
  try {
    const parsed = await readManifest(zip, entries, 'tenant archive')
    if (!isManifest(parsed)) throw new Error('not a tenant archive: manifest.json is not one')
    const manifest = parsed
    if (manifest.format !== ARCHIVE_FORMAT) throw new Error(`unknown archive format "${manifest.format}"`)
    const client = await pool.connect()
    const imported: Record<string, number> = {}
    try {
      const version = await client.query<{ name: string }>('select max(name) as name from kysely_migration')
      if (version.rows[0]!.name < manifest.schema_version)
        throw new Error(
          `the archive is of schema ${manifest.schema_version}, newer than this database (${version.rows[0]!.name}): upgrade first`,
        )
      await client.query('begin')
      const clash = await client.query('select 1 from tenants where id = $1 or slug = $2', [
        manifest.tenant.id,
        manifest.tenant.slug,
      ])
      if (clash.rows.length > 0)
        throw new Error(`a tenant with id ${manifest.tenant.id} or slug "${manifest.tenant.slug}" exists already`)
      for (const table of ['tenants', ...(await tenantTablesInOrder(client))]) {
        const entry = entries.get(`tables/${table}.jsonl`)
        const expected = manifest.tables[table]
        if (!entry || !expected) throw new Error(`the archive has no table ${table}`)
        const rows = await insertJsonLines(client, table, await entryStream(zip, entry), expected, 'archive')
        imported[table] = rows
      }
      // ids come from one sequence: later rows must not collide with the imported ones
      await bumpSequence(client)
      await client.query('commit')
    } catch (error) {
      await client.query('rollback').catch(() => undefined)
      throw error
    } finally {
      client.release()
    }
    const files = await writeEntryFiles(zip, entries, manifest.files, storageDir, 'archive')
    return { tenant: manifest.tenant, tables: imported, files }
  } finally {
    zip.close()
  }
}

/**
 * `global_id_seq` past every id of a table whose default draws from it, never back: the sequence is
 * set only when the largest id is not below a value it hands out after the maxima were read. (Setting
 * it to the larger of its `last_value` and the maxima, read before scanning every table, moved it back
 * below the ids other sessions drew meanwhile: their next rows collided, 409 in a parallel test run.)
 */
export async function bumpSequence(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query<{ table: string; column: string }>(`
    select table_name as table, column_name as column from information_schema.columns
    where table_schema = 'public' and column_default like 'nextval(''global_id_seq''%'`)
  if (rows.length === 0) return
  const maxima = rows.map((r) => `(select max(${ident(r.column)}) from ${ident(r.table)})`).join(', ')
  await client.query(`select setval('global_id_seq', x.m) from (select greatest(${maxima}) as m offset 0) x
    where x.m >= nextval('global_id_seq')`)
}

/**
 * Deletes every row of the tenant (children first) and its files; answers the row counts per table
 * before and after (all zero after).
 */
export async function deleteTenant(
  pool: pg.Pool,
  storageDir: string,
  slug: string,
): Promise<{ tenantId: number; deleted: Record<string, number>; remaining: Record<string, number> }> {
  const client = await pool.connect()
  const deleted: Record<string, number> = {}
  let tenantId: number
  try {
    await client.query('begin')
    const tenant = await client.query<{ id: string }>('select id from tenants where slug = $1 for update', [slug])
    if (tenant.rows.length === 0) throw new Error(`no tenant "${slug}"`)
    tenantId = Number(tenant.rows[0]!.id)
    for (const table of (await tenantTablesInOrder(client)).reverse()) {
      const result = await client.query(`delete from ${ident(table)} where tenant_id = $1`, [tenantId])
      deleted[table] = result.rowCount ?? 0
    }
    deleted.login_failures =
      (await client.query('delete from login_failures where tenant_slug = $1', [slug])).rowCount ?? 0
    deleted['graphile_worker jobs'] =
      (
        await client.query(
          `delete from graphile_worker._private_jobs where locked_at is null and payload::jsonb ->> 'tenantId' = $1`,
          [String(tenantId)],
        )
      ).rowCount ?? 0
    deleted.tenants = (await client.query('delete from tenants where id = $1', [tenantId])).rowCount ?? 0
    // running servers drop the tenant's cached actors (db/change-notices.ts), delivered with the commit
    await client.query(`select pg_notify('actor_changed', $1)`, [JSON.stringify({ tenant: tenantId })])
    await client.query('commit')
  } catch (error) {
    await client.query('rollback').catch(() => undefined)
    throw error
  } finally {
    client.release()
  }
  for (const root of await tenantFileRoots(storageDir, tenantId))
    await fs.rm(path.join(storageDir, root), { recursive: true, force: true })
  const remaining: Record<string, number> = {}
  for (const table of [...tenantTables(), 'tenants']) {
    const column = table === 'tenants' ? 'id' : 'tenant_id'
    const { rows } = await pool.query<{ n: string }>(
      `select count(*) as n from ${ident(table)} where ${ident(column)} = $1`,
      [tenantId],
    )
    remaining[table] = Number(rows[0]!.n)
  }
  remaining.files = (await tenantFileRoots(storageDir, tenantId)).length
  return { tenantId, deleted, remaining }
}
