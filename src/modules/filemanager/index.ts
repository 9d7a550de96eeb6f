import type { AppModule } from '../../platform/app-module.js'
import { contentRoutes, contentShareTarget, contentSyncSource } from '../content/index.js'
import { contentTarget } from '../entity-permissions/index.js'
import { grantTokenActorFor } from '../shared-items/index.js'
import { createFilesService } from './filemanager-files.service.js'
import { fileRoutes } from './filemanager.routes.js'
import { directories, directoryBodies, files } from './filemanager.content.js'
import { fileBytesQuota } from './filemanager.queries.js'

export { directories as filemanagerDirectories, files as filemanagerFiles } from './filemanager.content.js'

export const filemanagerModule: AppModule = {
  name: 'filemanager',
  routes: async (app, { db, config }) => {
    await contentRoutes(app, directories, {
      db,
      tag: 'filemanager',
      collection: '/api/filemanager/directories',
      item: '/api/filemanager/directories/:id',
      bodies: directoryBodies,
      operations: ['list', 'show', 'create', 'delete'],
      grantTokens: grantTokenActorFor(config.baseUrl),
    })
    await contentRoutes(app, files, {
      db,
      tag: 'filemanager',
      collection: '/api/filemanager/files',
      item: '/api/filemanager/files/:id',
      bodies: {},
      operations: ['list', 'show'],
      grantTokens: grantTokenActorFor(config.baseUrl),
    })
    await fileRoutes(app, {
      db,
      service: createFilesService({ db, config }),
      storageDir: config.storageDir,
      grantTokens: grantTokenActorFor(config.baseUrl),
    })
  },
  grantTargets: [directories, files].map((content) => contentTarget({ ...content, keys: ['view', 'write'] })),
  syncSources: [contentSyncSource(files, { containers: ['filemanagerDirectory'] })],
  quotaCounters: [fileBytesQuota],
  shareTargets: [
    contentShareTarget(directories),
    contentShareTarget(files, (row, base) => ({
      showFileContent: `${base}/api/filemanager/files/${row.id}/content`,
      downloadFileContent: `${base}/api/filemanager/files/${row.id}/download`,
      ...(row.has_poster ? { filePoster: `${base}/api/filemanager/files/${row.id}/poster` } : {}),
    })),
  ],
}
