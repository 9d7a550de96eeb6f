import type { AppModule } from '../../platform/app-module.js'
import { resolveDatabaseUrl } from '../../platform/db/database.js'
import { createPgPubSub } from '../../platform/realtime/pg-pubsub.js'
import { syncRoutes } from './sync.routes.js'
import { createSyncService } from './sync.service.js'
import { pruneSyncClients } from '../../platform/sync/sync-feed.js'

/** `GET /api/sync`: the permission-aware change feed over the entities modules register (platform/sync). */
export const syncModule: AppModule = {
  name: 'sync',
  routes: async (app, deps) => {
    // one LISTEN connection per process for the long polls, opened by the first one
    const pubsub = createPgPubSub({
      connectionString: async () =>
        deps.databaseUrl ?? (await resolveDatabaseUrl({ dataDir: deps.config.db.dataDir })).url,
      onError: (error) => deps.log.warn({ err: error }, 'sync realtime listener error'),
      keepProcessAlive: false,
    })
    app.addHook('onClose', async () => pubsub.close())
    await syncRoutes(app, createSyncService(deps, pubsub))
  },
  jobs: (deps) => ({
    'sync:prune': async () => {
      const deleted = await pruneSyncClients(deps.db, deps.config.syncRetentionDays)
      if (deleted > 0) deps.log.info({ deleted }, 'sync retention: device records deleted')
    },
  }),
  // daily, 03:45 UTC
  cron: ['45 3 * * * sync:prune'],
}
