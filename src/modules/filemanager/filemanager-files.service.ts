import { fileTypeFromFile } from 'file-type'
import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import type { Viewer } from '../content/index.js'
import { invalidField, notFound } from '../../platform/http/errors.js'
import type { UploadedFile } from '../../platform/http/multipart.js'
import { assertQuota } from '../../platform/limits/quotas.js'
import { createFileStorage } from '../../platform/storage/file-storage.js'
import { files, type UploadFileBody } from './filemanager.content.js'
import { fileBytesQuota } from './filemanager.queries.js'

const POSTER_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp'])
export type FileVariant = 'content' | 'download' | 'poster'

export type FilesService = ReturnType<typeof createFilesService>

/** Uploads and byte access of file-manager files; records go through the generic content resource. */
export function createFilesService({ db, config }: Pick<AppDeps, 'db' | 'config'>) {
  const storage = createFileStorage(config.storageDir)
  const area = (tenantId: number) => `filemanager/${tenantId}`
  const detect = async (upload: UploadedFile) => (await fileTypeFromFile(storage.path(upload.area, upload.name)))?.mime

  /**
   * Stores an uploaded file (and optional image poster) and creates its record; the client's type is
   * ignored. An upload past the tenant's `file_bytes` quota (file and poster) is a 413, nothing kept.
   */
  async function upload(actor: Actor, body: UploadFileBody, uploads: Record<string, UploadedFile> | null | undefined) {
    const file = uploads?.file
    if (!file) throw invalidField('file', 'is required (send it as multipart/form-data)')
    const poster = uploads?.poster
    const posterType = poster && (await detect(poster))
    if (poster && !POSTER_TYPES.has(posterType ?? ''))
      throw invalidField('poster', 'must be a JPEG, PNG, GIF or WebP image')
    const mediaType = (await detect(file)) ?? 'application/octet-stream'
    const kept = [await storage.move(file, area(actor.tenantId))]
    if (poster) kept.push(await storage.move(poster, area(actor.tenantId)))
    const posterSize = kept[1]?.size ?? 0
    try {
      const row = await files.create(
        db,
        actor,
        { name: body.name ?? (file.clientName || 'file').slice(0, 255), directory_id: body.directory_id ?? null },
        {
          size: kept[0].size,
          media_type: mediaType,
          has_poster: poster !== undefined,
          storage_name: kept[0].name,
          poster_storage_name: kept[1]?.name ?? null,
          poster_size: posterSize,
        },
        {
          beforeInsert: (trx) =>
            assertQuota(trx, actor.tenantId, fileBytesQuota, config.limits.quotas, kept[0].size + posterSize),
        },
      )
      return files.show(db, actor, row.id, {}, true)
    } catch (error) {
      for (const stored of kept) await storage.remove(stored.area, stored.name)
      throw error
    }
  }

  /** Deletes the record (grants, domain event), then its bytes. */
  async function remove(actor: Actor, id: number) {
    const row = await files.remove(db, actor, id)
    for (const name of [row.storage_name, row.poster_storage_name])
      if (typeof name === 'string') await storage.remove(area(actor.tenantId), name)
  }

  /** The stored bytes of a file for one viewer: 403 without `filemanager.view`, 404 when not visible or no poster. */
  async function openBytes({ actor, viaGrantToken }: Viewer, id: number, variant: FileVariant) {
    if (!viaGrantToken) requirePermission(actor, 'filemanager.view')
    const row = viaGrantToken ? await files.findStored(db, actor.tenantId, id) : await files.findVisible(db, actor, id)
    if (!row) throw notFound('File')
    const name = variant === 'poster' ? row.poster_storage_name : row.storage_name
    if (typeof name !== 'string') throw notFound('Poster')
    const stored = await storage.open(area(actor.tenantId), name)
    if (!stored) throw notFound('File')
    stored.stream.destroy() // the response opens its own (ranged) stream
    const mediaType =
      variant === 'poster'
        ? ((await fileTypeFromFile(stored.path))?.mime ?? 'application/octet-stream')
        : String(row.media_type)
    return { path: stored.path, size: stored.size, mediaType, fileName: String(row.name) }
  }

  return { upload, remove, openBytes }
}
