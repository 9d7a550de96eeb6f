import type { App } from '../../platform/app-module.js'
import { Type } from 'typebox'
import { contentRecordSchema, type GrantTokenActor, resolveViewer } from '../content/index.js'
import { sendStoredFile } from '../../platform/http/stored-file-response.js'
import type { Db } from '../../platform/db/schema.js'
import { multipartBody } from '../../platform/http/multipart.js'
import { errorResponses, IdParamsSchema, NoContentSchema } from '../../platform/http/schemas.js'
import type { FilesService, FileVariant } from './filemanager-files.service.js'
import { FILE_MAX_BYTES, files, POSTER_MAX_BYTES, UploadFileBodySchema } from './filemanager.content.js'

interface Deps {
  db: Db
  service: FilesService
  storageDir: string
  grantTokens: GrantTokenActor
}

const bytes = {
  description: 'the stored bytes; Content-Type from their magic bytes',
  content: { '*/*': { schema: Type.String({ format: 'binary' }) } },
}
const GrantTokenQuery = Type.Object({ grant_token: Type.Optional(Type.String({ maxLength: 4096 })) })

/** Upload, delete and the three byte routes (content inline, download as attachment, poster). */
export async function fileRoutes(app: App, { db, service, storageDir, grantTokens }: Deps): Promise<void> {
  const tags = ['filemanager']
  app.post(
    '/api/filemanager/files',
    {
      schema: {
        tags,
        summary:
          "Upload a file (multipart/form-data: file, optional poster, name, directory_id); past the organisation's file_bytes quota: 413 `quota_exceeded`",
        consumes: ['multipart/form-data'],
        body: UploadFileBodySchema,
        response: { 201: contentRecordSchema(files), ...errorResponses },
      },
      preValidation: multipartBody({
        schema: UploadFileBodySchema,
        files: { file: { maxBytes: FILE_MAX_BYTES }, poster: { maxBytes: POSTER_MAX_BYTES } },
        storageDir,
      }),
    },
    async (request, reply) => reply.code(201).send(await service.upload(request.actor, request.body, request.uploads)),
  )

  app.delete(
    '/api/filemanager/files/:id',
    { schema: { tags, params: IdParamsSchema, response: { 204: NoContentSchema, ...errorResponses } } },
    async (request, reply) => {
      await service.remove(request.actor, request.params.id)
      return reply.code(204).send()
    },
  )

  const variants: Array<[FileVariant, 'inline' | 'attachment', boolean]> = [
    ['content', 'inline', true],
    ['download', 'attachment', true],
    ['poster', 'inline', false],
  ]
  for (const [variant, disposition, ranges] of variants) {
    app.get(
      `/api/filemanager/files/:id/${variant}`,
      {
        config: { public: true },
        schema: {
          tags,
          summary: `File ${variant} (bearer, or grant_token for exactly this file)`,
          params: IdParamsSchema,
          querystring: GrantTokenQuery,
          response: { 200: bytes, 206: bytes, ...errorResponses },
        },
      },
      async (request, reply) => {
        const id = request.params.id
        const viewer = await resolveViewer(request, db, files.alias, id, request.query.grant_token, grantTokens)
        const file = await service.openBytes(viewer, id, variant)
        return sendStoredFile(request, reply, { ...file, disposition, ranges })
      },
    )
  }
}
