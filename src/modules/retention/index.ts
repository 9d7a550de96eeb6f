import type { AppModule } from '../../platform/app-module.js'
import { retentionRoutes } from './retention.routes.js'
import { createRetentionService } from './retention.service.js'

export { createRetentionService, DATA_CLASSES } from './retention.service.js'

export const RETENTION_SWEEP_JOB = 'retention:sweep'

/** Retention per tenant (issue 45): settings, and a daily sweep of every tenant at 03:30 UTC. */
export const retentionModule: AppModule = {
  name: 'retention',
  routes: (app, deps) => retentionRoutes(app, { retention: createRetentionService(deps) }),
  jobs: (deps) => ({
    [RETENTION_SWEEP_JOB]: async () => {
      await createRetentionService(deps).sweepAll()
    },
  }),
  cron: [`30 3 * * * ${RETENTION_SWEEP_JOB}`],
}
