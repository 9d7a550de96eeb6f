import type { FastifyInstance } from 'fastify'
import { registerCrudRoutes } from '../../platform/http/crud-routes.js'
import { CreateFolderBodySchema, FolderSchema, UpdateFolderBodySchema } from './folders.schemas.js'
import { folderResource } from './folders.resource.js'
import type { FoldersService } from './folders.service.js'

export async function foldersRoutes(app: FastifyInstance, { folders }: { folders: FoldersService }): Promise<void> {
  registerCrudRoutes(app, {
    path: '/api/folders', tag: 'folders', itemSchema: FolderSchema, resource: folderResource(null),
    createBodySchema: CreateFolderBodySchema, updateBodySchema: UpdateFolderBodySchema,
    handlers: { list: folders.listFolders, show: folders.getFolder, create: folders.createFolder, update: folders.updateFolder, remove: folders.deleteFolderTree },
  })
}
