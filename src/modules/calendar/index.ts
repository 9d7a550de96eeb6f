import type { AppModule } from '../../platform/app-module.js'
import { contentRoutes, contentShareTarget, contentSyncSource } from '../content/index.js'
import { contentTarget } from '../entity-permissions/index.js'
import { actorFromGrantToken } from '../shared-items/index.js'
import { calendarEventBodies, calendarEvents } from './calendar.content.js'

export { calendarEvents } from './calendar.content.js'

export const calendarModule: AppModule = {
  name: 'calendar',
  routes: (app, { db }) =>
    contentRoutes(app, calendarEvents, {
      db,
      tag: 'calendar',
      collection: '/api/calendar/events',
      item: '/api/calendar/events/:id',
      bodies: calendarEventBodies,
      operations: ['list', 'show', 'create', 'update', 'delete'],
      grantTokens: actorFromGrantToken,
    }),
  grantTargets: [contentTarget({ ...calendarEvents, keys: ['view'] })],
  shareTargets: [contentShareTarget(calendarEvents)],
  syncSources: [contentSyncSource(calendarEvents)],
}
