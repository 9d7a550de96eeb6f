import type { AppModule } from '../../platform/app-module.js'
import {
  contentRoutes,
  contentShareTarget,
  contentSyncSource,
  CONTENT_REMINDER_RECIPIENTS,
  publishJobHandlers,
  reminderRecipientsSql,
  readingRoutes,
} from '../content/index.js'
import { contentTarget } from '../entity-permissions/index.js'
import { grantTokenActorFor } from '../shared-items/index.js'
import {
  chapterBodies,
  entryBodies,
  MANUAL_ENTRY_VIEWERS,
  manualChapters,
  manualEntries,
  manualReading,
} from './manuals.content.js'

export { manualChapters, manualEntries } from './manuals.content.js'

export const manualsModule: AppModule = {
  name: 'manuals',
  routes: async (app, { db, config }) => {
    await contentRoutes(app, manualChapters, {
      db,
      tag: 'manuals',
      collection: '/api/manuals/chapters',
      item: '/api/manuals/chapters/:id',
      bodies: chapterBodies,
      operations: ['list', 'show', 'create', 'update', 'delete'],
      grantTokens: grantTokenActorFor(config.baseUrl),
    })
    await contentRoutes(app, manualEntries, {
      db,
      tag: 'manuals',
      collection: '/api/manuals/chapters/:id/entries',
      parentColumn: 'chapter_id',
      bodies: { create: entryBodies.create },
      operations: ['list', 'create'],
    })
    await contentRoutes(app, manualEntries, {
      db,
      tag: 'manuals',
      collection: '/api/manuals/entries',
      item: '/api/manuals/entries/:id',
      bodies: { update: entryBodies.update },
      operations: ['show', 'update', 'delete'],
      grantTokens: grantTokenActorFor(config.baseUrl),
    })
    await readingRoutes(app, manualReading, {
      db,
      tag: 'manuals',
      item: '/api/manuals/entries/:id',
      label: 'manual entry',
    })
  },
  grantTargets: [manualChapters, manualEntries].map((content) =>
    contentTarget({ ...content, keys: ['view', 'write'] }),
  ),
  shareTargets: [manualChapters, manualEntries].map((content) => contentShareTarget(content)),
  recipientsQueries: {
    [MANUAL_ENTRY_VIEWERS]: (tenantId, id) => manualReading.audienceSql(tenantId, id),
    [CONTENT_REMINDER_RECIPIENTS]: reminderRecipientsSql,
  },
  contentReadings: { manualEntry: manualReading },
  syncSources: [
    contentSyncSource(manualChapters),
    contentSyncSource(manualEntries, { events: ['manuals.entry.published'], containers: ['manualChapter'] }),
  ],

  jobs: ({ db }) => publishJobHandlers(db),
}
