import { Type } from 'typebox'
import { defineContent, contentBodies } from '../content/index.js'
import { conflict } from '../../platform/http/errors.js'
import { IdSchema, Nullable } from '../../platform/http/schemas.js'
import { directoryHoldsAnything } from './filemanager.queries.js'

/** Directories: a tree by `parent_id`; a directory's grants restrict everything below it (files inherit their directory's). */
export const directories = defineContent({
  alias: 'filemanagerDirectory',
  table: 'filemanager_directories',
  module: 'filemanager',
  label: 'Directory',
  titleColumn: 'name',
  fields: { name: { type: 'string' }, parent_id: { type: 'id' } },
  references: { parent_id: 'self' },
  tree: { column: 'parent_id' },
  appPath: (row) => `/filemanager/directories/${row.id}`,
  async beforeDelete(trx, actor, row) {
    if (await directoryHoldsAnything(trx, actor.tenantId, row.id))
      throw conflict('directory_not_empty', 'The directory still holds files or directories')
  },
})

/** Files: bytes in storage (never in a response field), type detected from magic bytes at upload. */
export const files = defineContent({
  alias: 'filemanagerFile',
  table: 'filemanager_files',
  module: 'filemanager',
  label: 'File',
  titleColumn: 'name',
  fields: {
    name: { type: 'string' },
    directory_id: { type: 'id' },
    size: { type: 'integer' },
    media_type: { type: 'string' },
    has_poster: { type: 'boolean' },
  },
  parent: { column: 'directory_id', resource: directories },
  references: { directory_id: directories },
  appPath: (row) => `/filemanager/files/${row.id}`,
})

export const directoryBodies = contentBodies(
  { name: Type.String({ minLength: 1, maxLength: 255 }), parent_id: Nullable(IdSchema) },
  ['name'],
)

/** Upload limits (contract 00 §8): 10 MiB per file; posters are images of at most 5 MiB. */
export const FILE_MAX_BYTES = 10 * 1024 * 1024
export const POSTER_MAX_BYTES = 5 * 1024 * 1024

export const UploadFileBodySchema = Type.Object(
  {
    file: Type.Optional(Type.String({ format: 'binary', description: 'the file (required), at most 10 MiB' })),
    poster: Type.Optional(
      Type.String({ format: 'binary', description: 'optional JPEG/PNG/GIF/WebP poster, at most 5 MiB' }),
    ),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    directory_id: Type.Optional(Nullable(IdSchema)),
  },
  { additionalProperties: false },
)
export type UploadFileBody = { name?: string; directory_id?: number | null }
