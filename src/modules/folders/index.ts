import type { AppModule } from '../../platform/app-module.js'
import { folderGrantTarget } from './folders.access.js'
import { folderReference } from './folder-references.js'
import { foldersRoutes } from './folders.routes.js'
import { createFoldersService } from './folders.service.js'
import { folderSyncSource } from './folders.sync.js'

// Public surface for content modules: folder references to detach, folder visibility for their lists.
export { folderReference, type FolderReference } from './folder-references.js'
export {
  folderVisibleSql,
  folderIdVisibleSql,
  folderIdVisibleToEachSql,
  type FolderViewerSet,
  viewableFolderTypes,
  isUsableFolder,
} from './folders-visibility.queries.js'
export { canAdministrateFolder } from './folders.access.js'
export { FOLDER_TYPES, FOLDER_TYPE_MODULE, folderGrantKeys } from './folder-types.js'

export const foldersModule: AppModule = {
  name: 'folders',
  routes: (app, deps) => foldersRoutes(app, { folders: createFoldersService(deps) }),
  grantTargets: [folderGrantTarget],
  // departments and roles hold folder ids too; their modules do not depend on folders
  folderReferences: [folderReference('departments'), folderReference('roles')],
  syncSources: [folderSyncSource],
}
