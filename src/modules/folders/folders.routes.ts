import type { App } from '../../platform/app-module.js'
import { actorHandlers, registerResourceRoutes } from '../../platform/http/resource-routes.js'
import { CreateFolderBodySchema, FolderSchema, UpdateFolderBodySchema } from './folders.schemas.js'
import { folderResource } from './folders.resource.js'
import type { FoldersService } from './folders.service.js'

export async function foldersRoutes(app: App, { folders }: { folders: FoldersService }): Promise<void> {
  registerResourceRoutes(app, {
    collection: '/api/folders',
    item: '/api/folders/:id',
    tag: 'folders',
    itemSchema: FolderSchema,
    resource: folderResource(null),
    bodies: { create: CreateFolderBodySchema, update: UpdateFolderBodySchema },
    handlers: actorHandlers<typeof CreateFolderBodySchema, typeof UpdateFolderBodySchema>({
      list: folders.listFolders,
      show: folders.getFolder,
      create: folders.createFolder,
      update: folders.updateFolder,
      remove: folders.deleteFolderTree,
    }),
  })
}
