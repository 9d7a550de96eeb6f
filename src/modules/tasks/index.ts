import type { AppModule } from '../../platform/app-module.js'
import { contentRoutes, contentShareTarget, contentSyncSource } from '../content/index.js'
import { contentTarget } from '../entity-permissions/index.js'
import { folderReference } from '../folders/index.js'
import { grantTokenActorFor } from '../shared-items/index.js'
import { taskExecutionBodies, taskExecutions } from './tasks.content.js'

export { taskExecutions } from './tasks.content.js'

export const tasksModule: AppModule = {
  name: 'tasks',
  routes: (app, { db, config }) =>
    contentRoutes(app, taskExecutions, {
      db,
      tag: 'tasks',
      collection: '/api/tasks/executions',
      item: '/api/tasks/executions/:id',
      bodies: taskExecutionBodies,
      operations: ['list', 'show', 'create', 'update', 'delete'],
      grantTokens: grantTokenActorFor(config.baseUrl),
    }),
  grantTargets: [contentTarget({ ...taskExecutions, keys: ['view'] })],
  shareTargets: [contentShareTarget(taskExecutions)],
  folderReferences: [folderReference('task_executions', 'folder_id', 'taskExecution')],
  // its folder is itself synced: the folder's grants and moves are access changes already
  syncSources: [contentSyncSource(taskExecutions)],
}
