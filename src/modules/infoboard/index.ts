import { Type } from 'typebox'
import type { AppModule } from '../../platform/app-module.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import {
  CONTENT_REMINDER_RECIPIENTS,
  publishJobHandlers,
  readReachDetail,
  reminderRecipientsSql,
  writeReachDetail,
  readingRoutes,
  contentRoutes,
  contentShareTarget,
  contentSyncSource,
} from '../content/index.js'
import { errorResponses } from '../../platform/http/schemas.js'
import { contentTarget } from '../entity-permissions/index.js'
import { folderReference } from '../folders/index.js'
import { grantTokenActorFor } from '../shared-items/index.js'
import {
  commentBodies,
  INFOBOARD_POST_VIEWERS,
  infoboardComments,
  infoboardPosts,
  infoboardReading,
  postBodies,
} from './infoboard.content.js'

export { infoboardPosts, infoboardComments, infoboardReading } from './infoboard.content.js'

const ReadingSettingsSchema = Type.Object(
  {
    reach_detail: Type.Union([Type.Literal('named'), Type.Literal('counts_only')], {
      description:
        'named: holders of `infoboard.reach` / `manuals.reach` see who read what; counts_only: counts only, departments under 5 people left out',
    }),
  },
  { $id: 'ReadingSettings', additionalProperties: false },
)

export const infoboardModule: AppModule = {
  name: 'infoboard',
  routes: async (app, { db, config }) => {
    await contentRoutes(app, infoboardPosts, {
      db,
      tag: 'infoboard',
      collection: '/api/infoboard/posts',
      item: '/api/infoboard/posts/:id',
      bodies: postBodies,
      operations: ['list', 'show', 'create', 'update', 'delete'],
      grantTokens: grantTokenActorFor(config.baseUrl),
    })
    await contentRoutes(app, infoboardComments, {
      db,
      tag: 'infoboard',
      collection: '/api/infoboard/posts/:id/comments',
      parentColumn: 'post_id',
      bodies: commentBodies,
      operations: ['list', 'create'],
    })
    await readingRoutes(app, infoboardReading, {
      db,
      tag: 'infoboard',
      item: '/api/infoboard/posts/:id',
      label: 'infoboard post',
    })

    // the tenant's works-council setting for reading data (docs/decisions/reach-detail.md)
    const readSettings = async (tenantId: number) => ({ reach_detail: await readReachDetail(db, tenantId) })
    app.get(
      '/api/administration/reading-settings',
      {
        schema: {
          tags: ['infoboard'],
          description: 'Who may see per-person reading data (any authenticated user may read the setting).',
          response: { 200: ReadingSettingsSchema, ...errorResponses },
        },
      },
      async (request) => readSettings(request.actor.tenantId),
    )
    app.put(
      '/api/administration/reading-settings',
      {
        schema: {
          tags: ['infoboard'],
          description: 'Sets `reach_detail` (permission `tenant.administrate`).',
          body: ReadingSettingsSchema,
          response: { 200: ReadingSettingsSchema, ...errorResponses },
        },
      },
      async (request) => {
        requirePermission(request.actor, 'tenant.administrate')
        await writeReachDetail(db, request.actor.tenantId, request.body.reach_detail)
        return readSettings(request.actor.tenantId)
      },
    )
  },
  grantTargets: [contentTarget({ ...infoboardPosts, keys: ['view', 'comment'] })],
  shareTargets: [contentShareTarget(infoboardPosts), contentShareTarget(infoboardComments)],
  folderReferences: [folderReference('infoboard_posts', 'channel_id', 'infoboardPost')],
  recipientsQueries: {
    // the audience by profile: the same users as the content rule over every user, evaluated per profile
    [INFOBOARD_POST_VIEWERS]: (tenantId, id) => infoboardReading.audienceSql(tenantId, id),
    [CONTENT_REMINDER_RECIPIENTS]: reminderRecipientsSql,
  },
  contentReadings: { infoboardPost: infoboardReading },
  syncSources: [
    contentSyncSource(infoboardPosts, { events: ['infoboard.post.published'] }),
    // a comment is visible iff its post is: the post's move, deletion (comments cascade), publication or
    // rescheduling changes who sees its comments; a plain edit does not
    contentSyncSource(infoboardComments, {
      containers: ['infoboardPost'],
      containerEvents: (event) =>
        event.type === 'infoboardPost.deleted' ||
        event.type === 'infoboard.post.published' ||
        (event.type === 'infoboardPost.updated' && ['channel_id', 'published_at'].some((f) => f in (event.data ?? {}))),
    }),
  ],

  jobs: ({ db }) => publishJobHandlers(db),
}
