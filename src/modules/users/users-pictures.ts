import { fileTypeFromFile } from 'file-type'
import type { FileStorage } from '../../platform/storage/file-storage.js'
import type { UploadedFile } from '../../platform/http/multipart.js'

/** Accepted picture types, detected by magic bytes (never the client's claim); SVG and HTML never match. */
const PICTURE_TYPES = new Map([
  ['image/jpeg', 'jpg'],
  ['image/png', 'png'],
  ['image/gif', 'gif'],
  ['image/webp', 'webp'],
])

export type ProfilePictures = ReturnType<typeof createProfilePictures>

/** Profile-picture files: one folder per tenant, random file names, content type from the bytes. */
export function createProfilePictures(storage: FileStorage) {
  const area = (tenantId: number) => `profile-pictures/${tenantId}`

  /** The detected image type of an upload, or undefined when it is not an accepted image. */
  async function detect(upload: UploadedFile): Promise<{ mime: string; extension: string } | undefined> {
    const type = await fileTypeFromFile(storage.path(upload.area, upload.name))
    const extension = type && PICTURE_TYPES.get(type.mime)
    return type && extension ? { mime: type.mime, extension } : undefined
  }

  /** Moves a checked upload into the tenant's picture folder; returns the stored file name. */
  async function keep(tenantId: number, upload: UploadedFile, extension: string): Promise<string> {
    const stored = await storage.move(upload, area(tenantId), extension)
    return stored.name
  }

  async function remove(tenantId: number, name: string | null | undefined): Promise<void> {
    if (name) await storage.remove(area(tenantId), name).catch(() => undefined)
  }

  /** Opens a stored picture with its detected content type; undefined when the file is gone. */
  async function open(tenantId: number, name: string) {
    const file = await storage.open(area(tenantId), name)
    if (!file) return undefined
    const type = await fileTypeFromFile(file.path)
    return { ...file, mime: type && PICTURE_TYPES.has(type.mime) ? type.mime : 'application/octet-stream' }
  }

  return { detect, keep, remove, open }
}

/** `inline; filename="…"; filename*=UTF-8''…` that no file name can break (quotes, CR/LF, non-Latin). */
export function inlineDisposition(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\]/g, '_')
  const encoded = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  )
  return `inline; filename="${ascii}"; filename*=UTF-8''${encoded}`
}
