import { Type } from 'typebox'
import { defineContent } from '../../platform/content/content-resource.js'
import { contentBodies } from '../../platform/content/content-routes.js'
import { enqueueNotifications } from '../notifications/index.js'

export const manualChapters = defineContent({
  alias: 'manualChapter',
  table: 'manual_chapters',
  module: 'manuals',
  label: 'Manual chapter',
  titleColumn: 'title',
  fields: { title: { type: 'string' } },
  appPath: (row) => `/manuals/chapters/${row.id}`,
})

export const MANUAL_ENTRY_VIEWERS = 'manualEntry:viewers'

/** Entries of a chapter: visible where the chapter is; an update notifies every other viewer. */
export const manualEntries = defineContent({
  alias: 'manualEntry',
  table: 'manual_entries',
  module: 'manuals',
  label: 'Manual entry',
  titleColumn: 'title',
  fields: { chapter_id: { type: 'id' }, title: { type: 'string' }, body: { type: 'string' } },
  parent: { column: 'chapter_id', resource: manualChapters },
  appPath: (row) => `/manuals/entries/${row.id}`,
  async afterChange(trx, { kind, actor, row, eventId }) {
    if (kind !== 'updated') return
    await enqueueNotifications(trx, {
      tenantId: actor.tenantId,
      type: 'manualEntryUpdated',
      targetableType: 'manualEntry',
      targetableId: row.id,
      sourceKey: `manualEntryUpdated:${row.id}:${eventId}`,
      data: { title: String(row.title), body: 'A manual entry was updated', url: `/manuals/entries/${row.id}` },
      recipients: {
        query: { name: MANUAL_ENTRY_VIEWERS, targetId: row.id },
        exceptUserIds: row.user_id ? [row.user_id] : [],
      },
    })
  },
})

export const chapterBodies = contentBodies({ title: Type.String({ minLength: 1, maxLength: 255 }) }, ['title'])
export const entryBodies = contentBodies(
  { title: Type.String({ minLength: 1, maxLength: 255 }), body: Type.String({ maxLength: 65536 }) },
  ['title', 'body'],
)
