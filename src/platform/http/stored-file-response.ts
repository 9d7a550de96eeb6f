import { createReadStream } from 'node:fs'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from './errors.js'

/** RFC 6266 `Content-Disposition`: an ASCII fallback no name can break, plus `filename*` in UTF-8. */
export function contentDisposition(kind: 'inline' | 'attachment', fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\]/g, '_')
  const encoded = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  )
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encoded}`
}

export type ByteRange = { start: number; end: number }

/**
 * One `bytes=` range of RFC 9110 §14.1.2 against a representation of `size` bytes: the range,
 * `'unsatisfiable'`, or undefined to send the whole file (no header, another unit, several ranges,
 * or a malformed header — all of which a server may answer with 200).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (!header) return undefined
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!match) return undefined
  const [, first, last] = match
  if (first === '' && last === '') return undefined
  if (first === '') {
    const suffix = Number(last)
    if (suffix === 0 || size === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(first)
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1)
  if (last !== '' && Number(last) < start) return undefined
  if (start >= size) return 'unsatisfiable'
  return { start, end }
}

export interface StoredFileResponse {
  path: string
  size: number
  mediaType: string
  fileName: string
  disposition: 'inline' | 'attachment'
  /** Honour `Range` (content and download routes). */
  ranges: boolean
}

/**
 * Streams a stored file: type from the stored (magic-byte) media type, RFC 6266 disposition,
 * `nosniff` (set app-wide) and a sandboxing CSP, and single byte ranges (206 / 416).
 */
export function sendStoredFile(request: FastifyRequest, reply: FastifyReply, file: StoredFileResponse): FastifyReply {
  const range = file.ranges ? parseRange(request.headers.range, file.size) : undefined
  if (range === 'unsatisfiable') {
    throw new AppError(416, 'range_not_satisfiable', `The range is outside the file's ${file.size} bytes`, undefined, {
      'content-range': `bytes */${file.size}`,
    })
  }
  reply.headers({
    'content-type': file.mediaType,
    'content-disposition': contentDisposition(file.disposition, file.fileName),
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'cache-control': 'private, no-cache',
  })
  if (file.ranges) reply.header('accept-ranges', 'bytes')
  if (range) {
    return reply
      .code(206)
      .headers({
        'content-range': `bytes ${range.start}-${range.end}/${file.size}`,
        'content-length': range.end - range.start + 1,
      })
      .send(createReadStream(file.path, range))
  }
  return reply.header('content-length', file.size).send(createReadStream(file.path))
}
