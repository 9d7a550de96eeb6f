import { Type } from 'typebox'
import {
  defineContent,
  contentBodies,
  CONTENT_REMINDER_RECIPIENTS,
  defineReading,
  readingBodyFields,
  readingContentParts,
  type ReadingDeclaration,
} from '../content/index.js'
import { TimestampInputSchema } from '../../platform/http/schemas.js'
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

const entryReading: ReadingDeclaration = {
  alias: 'manualEntry',
  table: 'manual_entries',
  module: 'manuals',
  publishedEvent: 'manuals.entry.published',
  editsNotify: 'always',
}
const parts = readingContentParts(entryReading)

/** Entries of a chapter: visible where the chapter is (and once published); an update notifies every other viewer. */
export const manualEntries = defineContent({
  alias: 'manualEntry',
  table: 'manual_entries',
  module: 'manuals',
  label: 'Manual entry',
  titleColumn: 'title',
  fields: { chapter_id: { type: 'id' }, title: { type: 'string' }, body: { type: 'string' }, ...parts.fields },
  parent: { column: 'chapter_id', resource: manualChapters },
  viewRule: parts.viewRule,
  relations: parts.relations,
  defaultRelations: [...parts.defaultRelations],
  outputs: parts.outputs,
  customFilters: parts.customFilters,
  defaultSort: [...parts.defaultSort],
  appPath: (row) => `/manuals/entries/${row.id}`,
  afterChange: (trx, change) => manualReading.afterWrite(trx, change),
})

/**
 * An edit notifies `manualEntryUpdated` (contract 30); publishing notifies only when the entry asks
 * for a confirmation (`manualEntryReadingConfirmationRequired`, also sent with an edit then): a manual
 * is reference material, and contract 30 sends nothing when an entry is created.
 */
export const manualReading = defineReading(entryReading, manualEntries, {
  async published(trx, tenantId, row, eventId, kind) {
    const types = kind === 'published' ? [] : ['manualEntryUpdated']
    if (row.requires_reading_confirmation === true) types.push('manualEntryReadingConfirmationRequired')
    for (const type of types) {
      await enqueueNotifications(trx, {
        tenantId,
        type,
        targetableType: 'manualEntry',
        targetableId: row.id,
        sourceKey: `${type}:${row.id}:${eventId}`,
        data: {
          title: String(row.title),
          body: kind === 'published' ? 'Please read and confirm this manual entry' : 'A manual entry was updated',
          url: `/manuals/entries/${row.id}`,
        },
        recipients: {
          query: { name: MANUAL_ENTRY_VIEWERS, targetId: row.id },
          exceptUserIds: row.user_id ? [row.user_id] : [],
        },
      })
    }
  },
  async reminded(trx, tenantId, row, reminderId) {
    await enqueueNotifications(trx, {
      tenantId,
      type: 'manualEntryReadingConfirmationReminder',
      targetableType: 'manualEntry',
      targetableId: row.id,
      sourceKey: `manualEntryReadingConfirmationReminder:${row.id}:${reminderId}`,
      data: {
        title: String(row.title),
        body: 'Please confirm that you have read this manual entry',
        url: `/manuals/entries/${row.id}`,
      },
      recipients: { query: { name: CONTENT_REMINDER_RECIPIENTS, targetId: reminderId } },
    })
  },
})

export const chapterBodies = contentBodies({ title: Type.String({ minLength: 1, maxLength: 255 }) }, ['title'])
export const entryBodies = contentBodies(
  {
    title: Type.String({ minLength: 1, maxLength: 255 }),
    body: Type.String({ maxLength: 65536 }),
    ...readingBodyFields(TimestampInputSchema),
  },
  ['title', 'body'],
)
