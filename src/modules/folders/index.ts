import type { AppModule } from '../../platform/app-module.js'
import { registerSyncSource } from '../../platform/sync/sync-feed.js'
import { registerTarget } from '../entity-permissions/index.js'
import { folderGrantTarget } from './folders.access.js'
import { foldersRoutes } from './folders.routes.js'
import { createFoldersService } from './folders.service.js'

// Public surface for content modules: folder references to detach, folder visibility for their lists.
export { registerFolderReference } from './folder-references.js'
export { folderVisibleSql, folderIdVisibleSql, viewableFolderTypes, isUsableFolder } from './folders.visibility.js'
export { canAdministrateFolder } from './folders.access.js'
export { FOLDER_TYPES, FOLDER_TYPE_MODULE, folderGrantKeys } from './folder-types.js'

registerTarget(folderGrantTarget)

export const foldersModule: AppModule = {
  name: 'folders',
  routes: (app, deps) => {
    const folders = createFoldersService(deps)
    registerSyncSource({ entity: 'folder', table: 'folders', idType: 'bigint', list: folders.listFolders })
    return foldersRoutes(app, { folders })
  },
}
