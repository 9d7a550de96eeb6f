import fs from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { type Migration, type MigrationProvider, Migrator, sql } from 'kysely'
import { runMigrations as runWorkerMigrations } from 'graphile-worker'
import type pg from 'pg'
import type { Db } from './schema.js'

const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations')

/** Every `NNNN_name.ts` file in migrations/ is a migration, applied in name order. */
class DirectoryMigrationProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await fs.readdir(migrationsDir)).filter((f) => /^\d{4}_.+\.(ts|js)$/.test(f) && !f.endsWith('.d.ts'))
    const migrations: Record<string, Migration> = {}
    for (const file of files.sort()) {
      migrations[file.replace(/\.(ts|js)$/, '')] = await import(pathToFileURL(path.join(migrationsDir, file)).href)
    }
    return migrations
  }
}

/** Applies pending schema migrations (ours and the job queue's); serialized by an advisory lock. */
export async function migrateToLatest(db: Db, pool: pg.Pool): Promise<string[]> {
  const migrator = new Migrator({ db, provider: new DirectoryMigrationProvider() })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error
  await runWorkerMigrations({ pgPool: pool })
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

/** True when every known migration has been applied (readiness check). */
export async function isMigrated(db: Db): Promise<boolean> {
  const migrator = new Migrator({ db, provider: new DirectoryMigrationProvider() })
  const all = await migrator.getMigrations()
  return all.every((m) => m.executedAt !== undefined)
}

export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db)
}
