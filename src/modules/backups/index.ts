import type { AppDeps, AppModule } from '../../platform/app-module.js'
import { createPool } from '../../platform/db/database.js'
import { backupDatabase, pruneBackups } from './backup.js'

export const DAILY_BACKUP_JOB = 'backups:daily'

/**
 * The optional daily backup (BACKUP_DAILY=true, issue 45): what `workplace backup` does, from the
 * worker at 02:15 UTC, keeping the newest BACKUP_KEEP in BACKUP_DIR. graphile-worker's cron runs it
 * once per day across a fleet; the file lands on the disk of the worker that ran it.
 */
export async function dailyBackup({ config, databaseUrl, log }: AppDeps): Promise<string | undefined> {
  if (!config.backup.daily) return undefined
  if (!databaseUrl) throw new Error('the daily backup needs a direct database URL')
  // one connection with a real session: the snapshot is one REPEATABLE READ transaction
  const pool = createPool(databaseUrl, { max: 1, name: 'backup', allowExitOnIdle: true })
  try {
    const file = await backupDatabase(pool, config.storageDir, config.backup.dir)
    const pruned = await pruneBackups(config.backup.dir, config.backup.keep)
    log.info({ file, pruned: pruned.length }, 'daily backup written')
    return file
  } finally {
    await pool.end()
  }
}

export const backupsModule: AppModule = {
  name: 'backups',
  jobs: (deps) => ({
    [DAILY_BACKUP_JOB]: async () => {
      await dailyBackup(deps)
    },
  }),
  cron: [`15 2 * * * ${DAILY_BACKUP_JOB}`],
}
