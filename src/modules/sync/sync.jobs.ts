import type { Db } from '../../platform/db/schema.js'
import type { JobHandlers } from '../../platform/jobs/jobs.js'
import { selectTenantIds } from '../tenants/index.js'
import { purgeTenantChanges } from './sync.queries.js'

export const SYNC_PURGE_JOB = 'sync:purge'
export const SYNC_PURGE_CRON = `41 3 * * * ${SYNC_PURGE_JOB}`
/** Change records kept: a client away longer starts over with a snapshot (410 sync_reset). */
export const SYNC_RETENTION_DAYS = 30

/**
 * Purges old tombstones, readers' own states and access changes, tenant by tenant (on Citus each
 * transaction stays on one tenant's shard), the tenants read from the reference table `tenants`.
 */
export async function purgeSyncChanges(db: Db, now = Date.now()): Promise<number> {
  const before = new Date(now - SYNC_RETENTION_DAYS * 24 * 60 * 60 * 1000)
  const tenants = await selectTenantIds(db)
  let purged = 0
  for (const id of tenants) purged += await purgeTenantChanges(db, id, before)
  return purged
}

export const syncJobs = ({ db }: { db: Db }): JobHandlers => ({
  [SYNC_PURGE_JOB]: async () => {
    await purgeSyncChanges(db)
  },
})
