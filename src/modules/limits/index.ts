import type { AppModule } from '../../platform/app-module.js'
import { sweepRateLimitCounters } from '../../platform/limits/rate-limiter.js'
import { selectTenantIds } from '../tenants/index.js'

export const RATE_LIMIT_SWEEP_JOB = 'limits:sweep_counters'

/** The usage and operator routes, registered by buildApp right after the limiter (they forget its cache). */
export { limitsRoutes } from './limits.routes.js'

/**
 * Fair-use limits (docs/limits.md): the limiter and the quotas' mechanism are platform code
 * (platform/limits, applied by app.ts), each quota's counter is the owning module's; this module holds
 * the usage and operator routes and runs the sweep of ended rate-limit windows on the job worker, once
 * an hour for the whole fleet (graphile-worker's cron), instead of on every node.
 */
export const limitsModule: AppModule = {
  name: 'limits',
  jobs: ({ db }) => ({
    [RATE_LIMIT_SWEEP_JOB]: async () => {
      await sweepRateLimitCounters(db, await selectTenantIds(db))
    },
  }),
  cron: [`17 * * * * ${RATE_LIMIT_SWEEP_JOB}`],
}
