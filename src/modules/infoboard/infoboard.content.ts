import { Type } from 'typebox'
import {
  type ContentChange,
  defineContent,
  contentBodies,
  CONTENT_REMINDER_RECIPIENTS,
  defineReading,
  readingBodyFields,
  readingContentParts,
  type ReadingDeclaration,
} from '../content/index.js'
import type { Db } from '../../platform/db/schema.js'
import { IdSchema, TimestampInputSchema } from '../../platform/http/schemas.js'
import { enqueueNotifications, sanitizeNotificationBody } from '../notifications/index.js'
import { commentCreateRule } from './infoboard.queries.js'

export const INFOBOARD_POST_VIEWERS = 'infoboardPost:viewers'

const postReading: ReadingDeclaration = {
  alias: 'infoboardPost',
  table: 'infoboard_posts',
  module: 'infoboard',
  publishedEvent: 'infoboard.post.published',
}
const parts = readingContentParts(postReading)

/** Posts live in infoboardChannel folders and inherit their visibility; bodies are sanitized HTML. */
export const infoboardPosts = defineContent({
  alias: 'infoboardPost',
  table: 'infoboard_posts',
  module: 'infoboard',
  label: 'Infoboard post',
  titleColumn: 'title',
  fields: {
    channel_id: { type: 'id' },
    title: { type: 'string' },
    body: { type: 'string' },
    ...parts.fields,
  },
  folder: { column: 'channel_id', type: 'infoboardChannel' },
  viewRule: parts.viewRule,
  relations: parts.relations,
  defaultRelations: [...parts.defaultRelations],
  outputs: parts.outputs,
  customFilters: parts.customFilters,
  defaultSort: [...parts.defaultSort],
  appPath: (row) => `/infoboard/posts/${row.id}`,
  prepare: (values) =>
    typeof values.body === 'string' ? { ...values, body: sanitizeNotificationBody(values.body) } : values,
  afterChange: (trx: Db, change: ContentChange) => infoboardReading.afterWrite(trx, change),
})

/**
 * Contract 30/40, as publishing changes them (issue 41): `infoboardPostCreated` when the post is
 * published (at once or by its schedule), `infoboardPostUpdated` on an edit sent with `notify: true`,
 * plus `infoboardPostReadingConfirmationRequired` when the post asks for a confirmation.
 */
export const infoboardReading = defineReading(postReading, infoboardPosts, {
  async published(trx, tenantId, row, eventId, kind) {
    const types = [kind === 'published' ? 'infoboardPostCreated' : 'infoboardPostUpdated']
    if (row.requires_reading_confirmation === true) types.push('infoboardPostReadingConfirmationRequired')
    for (const type of types) {
      await enqueueNotifications(trx, {
        tenantId,
        type,
        targetableType: 'infoboardPost',
        targetableId: row.id,
        sourceKey: `${type}:${row.id}:${eventId}`,
        data: { title: String(row.title), body: String(row.body).slice(0, 4096), url: `/infoboard/posts/${row.id}` },
        recipients: {
          query: { name: INFOBOARD_POST_VIEWERS, targetId: row.id },
          exceptUserIds: row.user_id ? [row.user_id] : [],
        },
      })
    }
  },
  async reminded(trx, tenantId, row, reminderId) {
    await enqueueNotifications(trx, {
      tenantId,
      type: 'infoboardPostReadingConfirmationReminder',
      targetableType: 'infoboardPost',
      targetableId: row.id,
      sourceKey: `infoboardPostReadingConfirmationReminder:${row.id}:${reminderId}`,
      data: {
        title: String(row.title),
        body: 'Please confirm that you have read this post',
        url: `/infoboard/posts/${row.id}`,
      },
      recipients: { query: { name: CONTENT_REMINDER_RECIPIENTS, targetId: reminderId } },
    })
  },
})

/** Comments: readable by the post's viewers; posting needs the `comment` rule of the post and its channel, and comments switched on. */
export const infoboardComments = defineContent({
  alias: 'infoboardComment',
  table: 'infoboard_comments',
  module: 'infoboard',
  label: 'Infoboard comment',
  fields: { post_id: { type: 'id' }, body: { type: 'string' } },
  parent: { column: 'post_id', resource: infoboardPosts },
  createBy: {
    viewersOfParent: true,
    rule: commentCreateRule,
  },
  appPath: (row) => `/infoboard/posts/${row.post_id}#comment-${row.id}`,
})

const postFields = {
  channel_id: IdSchema,
  title: Type.String({ minLength: 1, maxLength: 255 }),
  body: Type.String({ maxLength: 65536 }),
  ...readingBodyFields(TimestampInputSchema),
}
const created = contentBodies(postFields, ['channel_id', 'title', 'body'])
export const postBodies = {
  create: created.create,
  update: contentBodies(
    {
      ...postFields,
      notify: Type.Boolean({ description: 'notify the audience of this edit of a published post (default false)' }),
    },
    [],
  ).update,
}
export const commentBodies = contentBodies({ body: Type.String({ minLength: 1, maxLength: 10000 }) }, ['body'])
