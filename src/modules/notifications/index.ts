import type { AppModule } from '../../platform/app-module.js'
import { resolveDatabaseUrl } from '../../platform/db/database.js'
import { createPgPubSub } from '../../platform/realtime/pg-pubsub.js'
import { notificationsRoutes } from './notifications.routes.js'
import { pushRoutes } from './push/push.routes.js'
import { vapidKeySecrets } from '../../platform/keys/vapid-keys.js'
import { createNotificationsService } from './notifications.service.js'
import { createNotificationsSendService } from './sending/send.service.js'
import { createNotificationStreams } from './stream/stream.js'
import { GENERIC_NOTIFICATION, NOTIFICATION_CRON, notificationJobs } from './notifications.jobs.js'
export { runFanOut } from './notifications.jobs.js'
import { selectGenericNotifications } from './notifications.queries.js'
import { notificationSyncSource } from './notifications.sync.js'
import { preferencesSyncSource } from './preferences/preferences.sync.js'
import { pushSubscriptionsQuota } from './push/subscriptions.queries.js'

export { insertDefaultNotificationSettings, notificationSettingExists } from './preferences/settings.queries.js'
/** For content modules: queue notifications in the transaction of the change, or fan out directly. */
export {
  enqueueNotifications,
  fanOutNotifications,
  type NotificationSpec,
  type RecipientsQuery,
} from './sending/fan-out.js'
export type { TargetableLoader } from './notifications.resource.js'
export { sanitizeNotificationBody } from './sending/body-html.js'
export { deleteUserSubscriptions } from './push/subscriptions.queries.js'
export { createMailer, type Mailer } from './delivery/mailer.js'

export const notificationsModule: AppModule = {
  name: 'notifications',
  routes: async (app, deps) => {
    // One LISTEN connection per process, opened when the first stream does.
    const pubsub = createPgPubSub({
      connectionString: async () =>
        deps.databaseUrl ?? (await resolveDatabaseUrl({ dataDir: deps.config.db.dataDir })).url,
      onError: (error) => deps.log.warn({ err: error }, 'notifications realtime listener error'),
    })
    const streams = createNotificationStreams({ db: deps.db, pubsub, log: deps.log })
    app.addHook('preClose', async () => streams.closeAll())
    app.addHook('onClose', async () => pubsub.close())
    await pushRoutes(app, deps)
    await notificationsRoutes(app, {
      notifications: createNotificationsService(deps),
      sending: createNotificationsSendService(deps),
      streams,
    })
  },
  jobs: notificationJobs,
  secretHolders: [vapidKeySecrets],
  cron: NOTIFICATION_CRON,
  syncSources: [notificationSyncSource, preferencesSyncSource],
  quotaCounters: [pushSubscriptionsQuota],
  notificationTargetables: {
    [GENERIC_NOTIFICATION]: async (ctx, ids) => {
      const rows = await selectGenericNotifications(ctx.db, ctx.tenantId, ids)
      return new Map(rows.map((r) => [r.id, r]))
    },
  },
}
