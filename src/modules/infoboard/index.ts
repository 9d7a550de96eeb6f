import type { AppModule } from '../../platform/app-module.js'
import { contentRoutes } from '../../platform/content/content-routes.js'
import { contentShareTarget } from '../../platform/content/content-share-target.js'
import { contentTarget } from '../entity-permissions/index.js'
import { folderReference } from '../folders/index.js'
import { grantTokenActorFor } from '../shared-items/index.js'
import {
  commentBodies,
  INFOBOARD_POST_VIEWERS,
  infoboardComments,
  infoboardPosts,
  postBodies,
} from './infoboard.content.js'

export { infoboardPosts, infoboardComments } from './infoboard.content.js'

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
  },
  grantTargets: [contentTarget({ ...infoboardPosts, keys: ['view', 'comment'] })],
  shareTargets: [contentShareTarget(infoboardPosts), contentShareTarget(infoboardComments)],
  folderReferences: [folderReference('infoboard_posts', 'channel_id')],
  recipientsQueries: { [INFOBOARD_POST_VIEWERS]: (tenantId, id) => infoboardPosts.viewersSql(tenantId, id) },
}
