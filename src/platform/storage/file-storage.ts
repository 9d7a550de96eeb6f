import { randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream, type ReadStream } from 'node:fs'
import fs from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'

/** A file kept by the storage: `area` is a relative folder (e.g. `profile-pictures/42`), `name` a random file name. */
export interface StoredFile {
  area: string
  name: string
  size: number
}

// Names and area segments are generated or checked here: no user input ever reaches a path.
const SAFE_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

function checkSegments(value: string): string[] {
  const segments = value.split('/')
  if (segments.some((s) => !SAFE_SEGMENT.test(s) || s.includes('..')))
    throw new Error(`unsafe storage path segment in "${value}"`)
  return segments
}

/** A random file name (128 bits), with an optional extension of letters and digits. */
export function randomFileName(extension?: string): string {
  const base = randomBytes(16).toString('hex')
  return extension && /^[a-z0-9]{1,10}$/.test(extension) ? `${base}.${extension}` : base
}

export type FileStorage = ReturnType<typeof createFileStorage>

/** Plain files under one root directory (`config.storageDir`); every module shares this helper. */
export function createFileStorage(rootDir: string) {
  const filePath = (area: string, name: string) => path.join(rootDir, ...checkSegments(area), ...checkSegments(name))

  /** Streams `source` into a new file with a random name; a partial file is removed on failure. */
  async function save(area: string, source: Readable, extension?: string): Promise<StoredFile> {
    const name = randomFileName(extension)
    const target = filePath(area, name)
    await fs.mkdir(path.dirname(target), { recursive: true })
    const out = createWriteStream(target, { flags: 'wx', mode: 0o640 })
    try {
      await pipeline(source, out)
    } catch (error) {
      await fs.rm(target, { force: true })
      throw error
    }
    return { area, name, size: out.bytesWritten }
  }

  /** Moves a stored file to another area under a new random name (same filesystem: a rename). */
  async function move(file: { area: string; name: string }, toArea: string, extension?: string): Promise<StoredFile> {
    const name = randomFileName(extension)
    const target = filePath(toArea, name)
    await fs.mkdir(path.dirname(target), { recursive: true })
    await fs.rename(filePath(file.area, file.name), target)
    const { size } = await fs.stat(target)
    return { area: toArea, name, size }
  }

  /** Opens a stored file for reading; undefined when it does not exist. */
  async function open(
    area: string,
    name: string,
  ): Promise<{ stream: ReadStream; size: number; path: string } | undefined> {
    let target: string
    try {
      target = filePath(area, name)
    } catch {
      return undefined
    }
    const stat = await fs.stat(target).catch(() => undefined)
    if (!stat?.isFile()) return undefined
    return { stream: createReadStream(target), size: stat.size, path: target }
  }

  /** Deletes a stored file; a missing file is not an error. */
  async function remove(area: string, name: string): Promise<void> {
    await fs.rm(filePath(area, name), { force: true })
  }

  return { save, move, open, remove, path: filePath }
}
