import { createWriteStream } from 'node:fs'
import fs from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type pg from 'pg'
import { fileBytes, insertJsonLines, jsonLines } from './archive-entries.js'
import yazl from 'yazl'
import {
  bumpSequence,
  endWithManifest,
  entryStream,
  ident,
  openZip,
  primaryKey,
  readManifest,
  tablesInOrder,
  writeEntryFiles,
} from './tenant-archive.js'

/**
 * `workplace backup` / `restore` for the embedded default (issue 45): every table of schema `public`
 * (the migrations' bookkeeping aside) read in one REPEATABLE READ snapshot as JSON lines, every file of
 * the storage directory, and a manifest, in one ZIP. It is written under a temporary name and renamed
 * only when complete: a process killed mid-way leaves `….zip.partial`, never a `….zip`.
 */
export const BACKUP_FORMAT = 'workplace-backup/1'
const SKIPPED = new Set(['kysely_migration', 'kysely_migration_lock'])

export interface BackupManifest {
  format: string
  schema_version: string
  created_at: string
  tables: Record<string, { rows: number; sha256: string }>
  files: Record<string, { bytes: number; sha256: string }>
}

async function publicTables(client: pg.ClientBase): Promise<string[]> {
  const { rows } = await client.query<{ table: string }>(
    `select c.relname as table from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition order by 1`,
  )
  return rows.map((r) => r.table).filter((t) => !SKIPPED.has(t))
}

/** Writes a backup into `dir`; returns the complete file's path. */
export async function backupDatabase(pool: pg.Pool, storageDir: string, dir: string): Promise<string> {
  await fs.mkdir(dir, { recursive: true })
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const target = path.join(dir, `workplace-backup-${stamp}.zip`)
  const partial = `${target}.partial`
  const client = await pool.connect()
  try {
    await client.query('begin isolation level repeatable read read only')
    const version = await client.query<{ name: string }>('select max(name) as name from kysely_migration')
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      schema_version: version.rows[0]!.name,
      created_at: new Date().toISOString(),
      tables: {},
      files: {},
    }
    const zip = new yazl.ZipFile()
    const written = pipeline(zip.outputStream, createWriteStream(partial, { flags: 'wx', mode: 0o600 }))
    for (const table of await tablesInOrder(client, await publicTables(client))) {
      const key = (await primaryKey(client, table)).map(ident).join(', ')
      const lines = jsonLines(
        client,
        `select to_jsonb(t)::text as row from ${ident(table)} t${key ? ` order by ${key}` : ''}`,
        [],
        ({ count, sha256 }) => (manifest.tables[table] = { rows: count, sha256 }),
      )
      zip.addReadStream(Readable.from(lines), `tables/${table}.jsonl`)
    }
    const files = await fs.readdir(storageDir, { withFileTypes: true, recursive: true }).catch(() => [])
    for (const entry of files.filter((e) => e.isFile())) {
      const full = path.join(entry.parentPath, entry.name)
      const name = path.relative(storageDir, full).split(path.sep).join('/')
      if (name.startsWith('tmp-uploads/')) continue
      const bytes = fileBytes(full, ({ count, sha256 }) => (manifest.files[name] = { bytes: count, sha256 }))
      zip.addReadStream(Readable.from(bytes), `files/${name}`)
    }
    endWithManifest(zip, manifest)
    await written
    await client.query('commit')
  } catch (error) {
    await client.query('rollback').catch(() => undefined)
    await fs.rm(partial, { force: true })
    throw error
  } finally {
    client.release()
  }
  const handle = await fs.open(partial, 'r')
  await handle.sync()
  await handle.close()
  await fs.rename(partial, target)
  return target
}

/** Deletes the oldest complete backups of `dir` beyond the newest `keep`. */
export async function pruneBackups(dir: string, keep: number): Promise<string[]> {
  const names = (await fs.readdir(dir))
    .filter((n) => /^workplace-backup-.*\.zip$/.test(n))
    .sort()
    .reverse()
  const removed = names.slice(keep)
  for (const name of removed) await fs.rm(path.join(dir, name), { force: true })
  return removed
}

/**
 * Restores a backup into a freshly migrated database with no tenant (the rows the migrations seed are
 * replaced) and an empty storage directory; counts and checksums must match the manifest.
 */
export async function restoreDatabase(pool: pg.Pool, storageDir: string, file: string): Promise<BackupManifest> {
  const { zip, entries } = await openZip(file)
  try {
    const parsed = await readManifest(zip, entries, 'workplace backup')
    const format: unknown = parsed !== null && typeof parsed === 'object' ? Reflect.get(parsed, 'format') : undefined
    if (format !== BACKUP_FORMAT) throw new Error('not a workplace backup: unknown manifest format')
    const manifest = parsed as BackupManifest // eslint-disable-line @typescript-eslint/no-unsafe-type-assertion -- its format was checked
    const client = await pool.connect()
    try {
      const version = await client.query<{ name: string }>('select max(name) as name from kysely_migration')
      if (version.rows[0]!.name !== manifest.schema_version)
        throw new Error(
          `the backup is of schema ${manifest.schema_version}, this database of ${version.rows[0]!.name}: restore with the version that made it`,
        )
      await client.query('begin')
      const tenants = await client.query('select 1 from tenants limit 1')
      if (tenants.rows.length > 0) throw new Error('the database has tenants already: restore into a fresh one')
      const order = await tablesInOrder(client, Object.keys(manifest.tables))
      for (const table of [...order].reverse()) await client.query(`delete from ${ident(table)}`)
      for (const table of order) {
        const entry = entries.get(`tables/${table}.jsonl`)
        const expected = manifest.tables[table]!
        if (!entry) throw new Error(`the backup has no table ${table}`)
        await insertJsonLines(client, table, await entryStream(zip, entry), expected, 'backup')
      }
      await bumpSequence(client)
      await client.query('commit')
    } catch (error) {
      await client.query('rollback').catch(() => undefined)
      throw error
    } finally {
      client.release()
    }
    await writeEntryFiles(zip, entries, manifest.files, storageDir, 'backup')
    return manifest
  } finally {
    zip.close()
  }
}
