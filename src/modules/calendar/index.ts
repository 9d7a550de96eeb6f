import { contentSyncSource } from '../../platform/content/content-sync.js'
import { registerSyncSource } from '../../platform/sync/sync-feed.js'
import type { AppModule } from '../../platform/app-module.js'
import { contentRoutes } from '../../platform/content/content-routes.js'
import { contentShareTarget } from '../../platform/content/content-share-target.js'
import { contentTarget, registerTarget } from '../entity-permissions/index.js'
import { actorFromGrantToken, registerShareTarget } from '../shared-items/index.js'
import { calendarEventBodies, calendarEvents } from './calendar.content.js'

export { calendarEvents } from './calendar.content.js'

registerTarget(contentTarget({ ...calendarEvents, keys: ['view'] }))
registerShareTarget(contentShareTarget(calendarEvents))

export const calendarModule: AppModule = {
  name: 'calendar',
  routes: (app, { db }) => {
    registerSyncSource(contentSyncSource(calendarEvents, db))
    return contentRoutes(app, calendarEvents, {
      db,
      tag: 'calendar',
      collection: '/api/calendar/events',
      item: '/api/calendar/events/:id',
      bodies: calendarEventBodies,
      operations: ['list', 'show', 'create', 'update', 'delete'],
      grantTokens: actorFromGrantToken,
    })
  },
}
