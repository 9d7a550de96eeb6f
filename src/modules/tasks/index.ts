import { contentSyncSource } from '../../platform/content/content-sync.js'
import { registerSyncSource } from '../../platform/sync/sync-feed.js'
import type { AppModule } from '../../platform/app-module.js'
import { contentRoutes } from '../../platform/content/content-routes.js'
import { contentShareTarget } from '../../platform/content/content-share-target.js'
import { contentTarget, registerTarget } from '../entity-permissions/index.js'
import { registerFolderReference } from '../folders/index.js'
import { grantTokenActorFor, registerShareTarget } from '../shared-items/index.js'
import { taskExecutionBodies, taskExecutions } from './tasks.content.js'

export { taskExecutions } from './tasks.content.js'

registerTarget(contentTarget({ ...taskExecutions, keys: ['view'] }))
registerShareTarget(contentShareTarget(taskExecutions))
registerFolderReference('task_executions', 'folder_id')

export const tasksModule: AppModule = {
  name: 'tasks',
  routes: (app, { db, config }) => {
    registerSyncSource(contentSyncSource(taskExecutions, db))
    return contentRoutes(app, taskExecutions, {
      db,
      tag: 'tasks',
      collection: '/api/tasks/executions',
      item: '/api/tasks/executions/:id',
      bodies: taskExecutionBodies,
      operations: ['list', 'show', 'create', 'update', 'delete'],
      grantTokens: grantTokenActorFor(config.baseUrl),
    })
  },
}
