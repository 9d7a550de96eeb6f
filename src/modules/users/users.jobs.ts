import type { AppDeps } from '../../platform/app-module.js'
import { revokeUserTokens } from '../../platform/auth/tokens.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import type { JobHandlers } from '../../platform/jobs/jobs.js'
import { jobOf } from '../../platform/jobs/jobs.js'
import { createFileStorage } from '../../platform/storage/file-storage.js'
import {
  createDataExports,
  DATA_EXPORT_JOB,
  DATA_EXPORT_SWEEP_JOB,
  type DataExportJobPayload,
} from './users-data-export.js'
import * as queries from './users.queries.js'

export const DERIVE_ACTIVE_JOB = 'users:derive-active'
/** Daily, shortly after midnight UTC: entering/leaving dates that became "today" take effect. */
export const DERIVE_ACTIVE_CRON = `5 0 * * * ${DERIVE_ACTIVE_JOB}`

/**
 * Re-derives `active` for users whose flag follows their dates (contract 10), one transaction per
 * tenant with a `user.updated` event per change. Idempotent: a second run changes nothing.
 */
export async function deriveActiveForAllTenants({ db }: Pick<AppDeps, 'db'>): Promise<number> {
  let changed = 0
  for (const tenantId of await queries.selectTenantsWithDerivedUsers(db)) {
    changed += await db.transaction().execute(async (trx) => {
      const ids = await queries.rederiveActive(trx, tenantId)
      // a leaving_date that passed ends the user's sessions for good (issue 39)
      for (const id of await queries.inactiveAmong(trx, tenantId, ids)) await revokeUserTokens(trx, tenantId, id)
      for (const id of ids) {
        await recordDomainEvent(trx, {
          type: 'user.updated',
          tenantId,
          actorId: null,
          subjectType: 'user',
          subjectId: id,
          data: { changed: ['active'] },
        })
      }
      return ids.length
    })
  }
  return changed
}

export function usersJobs(deps: AppDeps): JobHandlers {
  const exports = createDataExports(deps, createFileStorage(deps.config.storageDir))
  return {
    [DERIVE_ACTIVE_JOB]: async () => {
      await deriveActiveForAllTenants(deps)
    },
    [DATA_EXPORT_JOB]: jobOf<DataExportJobPayload>((payload) => exports.build(payload)),
    [DATA_EXPORT_SWEEP_JOB]: async () => {
      await exports.sweep()
    },
  }
}
