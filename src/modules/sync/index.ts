import type { AppModule } from '../../platform/app-module.js'
import { resolveDatabaseUrl } from '../../platform/db/database.js'
import { createPgPubSub } from '../../platform/realtime/pg-pubsub.js'
import { syncEventSubscriber } from './sync.events.js'
import { SYNC_PURGE_CRON, syncJobs } from './sync.jobs.js'
import { syncRoutes } from './sync.routes.js'
import { createSyncService } from './sync.service.js'

/** Offline clients' change feed (issue 43, docs/sync.md): `GET /api/sync` over the modules' `syncSources`. */
export const syncModule: AppModule = {
  name: 'sync',
  routes: async (app, deps) => {
    // one LISTEN connection per process for the long polls, opened by the first one
    const pubsub = createPgPubSub({
      connectionString: async () =>
        deps.databaseUrl ?? (await resolveDatabaseUrl({ dataDir: deps.config.db.dataDir })).url,
      onError: (error) => deps.log.warn({ err: error }, 'sync listener error'),
      keepProcessAlive: false,
    })
    app.addHook('onClose', async () => pubsub.close())
    await syncRoutes(app, { sync: createSyncService({ ...deps, pubsub }) })
  },
  eventSubscribers: [syncEventSubscriber],
  jobs: syncJobs,
  cron: [SYNC_PURGE_CRON],
}

export { purgeSyncChanges } from './sync.jobs.js'
export { syncedGrantTargets } from './sync-sources.js'
export { deleteViewItemsOf } from './sync-views.queries.js'
