import { sql } from 'kysely'
import { Type } from 'typebox'
import { type ContentChange, defineContent } from '../../platform/content/content-resource.js'
import { contentBodies } from '../../platform/content/content-routes.js'
import type { Db } from '../../platform/db/schema.js'
import { IdSchema } from '../../platform/http/schemas.js'
import { folderIdVisibleSql } from '../folders/index.js'
import { enqueueNotifications, sanitizeNotificationBody } from '../notifications/index.js'

export const INFOBOARD_POST_VIEWERS = 'infoboardPost:viewers'

/** Contract 30/40: created/updated notices, plus the reading-confirmation one when the post asks for it. */
async function notifyViewers(trx: Db, { kind, actor, row, eventId }: ContentChange) {
  if (kind === 'deleted') return
  const types = [kind === 'created' ? 'infoboardPostCreated' : 'infoboardPostUpdated']
  if (row.requires_reading_confirmation === true) types.push('infoboardPostReadingConfirmationRequired')
  for (const type of types) {
    await enqueueNotifications(trx, {
      tenantId: actor.tenantId,
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
}

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
    requires_reading_confirmation: { type: 'boolean' },
  },
  folder: { column: 'channel_id', type: 'infoboardChannel', module: 'infoboard', visibleSql: folderIdVisibleSql },
  appPath: (row) => `/infoboard/posts/${row.id}`,
  prepare: (values) =>
    typeof values.body === 'string' ? { ...values, body: sanitizeNotificationBody(values.body) } : values,
  afterChange: notifyViewers,
})

/** Comments: readable by the post's viewers; posting needs the `comment` rule of the post and its channel. */
export const infoboardComments = defineContent({
  alias: 'infoboardComment',
  table: 'infoboard_comments',
  module: 'infoboard',
  label: 'Infoboard comment',
  fields: { post_id: { type: 'id' }, body: { type: 'string' } },
  parent: { column: 'post_id', resource: infoboardPosts },
  createBy: {
    viewersOfParent: true,
    rule: (p, post) => sql<boolean>`(${p.grant('comment', 'infoboardPost', sql.ref(`${post}.id`))}
      and ${p.grant('comment', 'folder', sql.ref(`${post}.channel_id`))})`,
  },
  appPath: (row) => `/infoboard/posts/${row.post_id}#comment-${row.id}`,
})

export const postBodies = contentBodies(
  {
    channel_id: IdSchema,
    title: Type.String({ minLength: 1, maxLength: 255 }),
    body: Type.String({ maxLength: 65536 }),
    requires_reading_confirmation: Type.Boolean(),
  },
  ['channel_id', 'title', 'body'],
)
export const commentBodies = contentBodies({ body: Type.String({ minLength: 1, maxLength: 10000 }) }, ['body'])
