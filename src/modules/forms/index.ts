import type { AppModule } from '../../platform/app-module.js'
import { contentRoutes, contentShareTarget, contentSyncSource } from '../content/index.js'
import { contentTarget } from '../entity-permissions/index.js'
import { folderReference } from '../folders/index.js'
import { actorFromGrantToken } from '../shared-items/index.js'
import { formBodies, formMessageBodies, formMessages, forms } from './forms.content.js'

export { forms, formMessages } from './forms.content.js'

export const formsModule: AppModule = {
  name: 'forms',
  routes: async (app, { db }) => {
    await contentRoutes(app, forms, {
      db,
      tag: 'forms',
      collection: '/api/forms',
      item: '/api/forms/:id',
      bodies: formBodies,
      operations: ['list', 'show', 'create', 'update', 'delete'],
      grantTokens: actorFromGrantToken,
    })
    await contentRoutes(app, formMessages, {
      db,
      tag: 'forms',
      collection: '/api/forms/:id/messages',
      parentColumn: 'form_id',
      bodies: formMessageBodies,
      operations: ['list', 'create'],
    })
  },
  grantTargets: [contentTarget({ ...forms, keys: ['view', 'viewFormMessages', 'administrate'] })],
  shareTargets: [contentShareTarget(forms), contentShareTarget(formMessages)],
  folderReferences: [folderReference('forms', 'folder_id', 'form')],
  // a form's folder is itself synced (its grants and moves are access changes); its messages are submissions, not offered
  syncSources: [contentSyncSource(forms)],
}
