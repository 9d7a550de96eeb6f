import type { FastifyInstance, FastifyRequest, preValidationAsyncHookHandler } from 'fastify'
import multipart, { type Multipart } from '@fastify/multipart'
import type { TSchema } from 'typebox'
import type { Config } from '../../config.js'
import { createFileStorage } from '../storage/file-storage.js'
import { AppError, badRequest, FieldErrorCollector, tooLarge } from './errors.js'

/** Default per-file upload limit (contract 00 §8); routes pass smaller ones. */
export const DEFAULT_FILE_LIMIT = 10 * 1024 * 1024
const UPLOAD_AREA = 'tmp-uploads'

/** A file of a multipart request, streamed to temporary storage; removed after the response unless moved. */
export interface UploadedFile {
  field: string
  /** The client's file name and content type: informational only, never trusted. */
  clientName: string
  clientType: string
  area: string
  name: string
  size: number
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `multipartBody` (null on the other routes). */
    uploads: Record<string, UploadedFile> | null
  }
}

/**
 * Registers @fastify/multipart once for the whole app. Routes opt in with `multipartBody(...)`; a
 * request's temporary uploads are deleted when its response is sent (a service moves what it keeps).
 */
export async function registerMultipart(app: FastifyInstance, config: Config): Promise<void> {
  const storage = createFileStorage(config.storageDir)
  await app.register(multipart, {
    limits: { fileSize: DEFAULT_FILE_LIMIT, files: 1, fields: 100, fieldSize: 64 * 1024, parts: 101, headerPairs: 100 },
    throwFileSizeLimit: true,
  })
  app.decorateRequest('uploads', null)
  app.addHook('onResponse', (request, _reply, done) => {
    if (!request.uploads) return done()
    void Promise.all(
      Object.values(request.uploads).map((upload) => storage.remove(upload.area, upload.name).catch(() => undefined)),
    ).finally(() => done())
  })
}

export interface MultipartBodyOptions {
  /** The multipart body schema: text fields are coerced to its property types before validation. */
  schema: TSchema
  /** File fields accepted, with their size limit in bytes. */
  files: Record<string, { maxBytes: number }>
  storageDir: string
}

function acceptedTypes(schema: Record<string, unknown> | undefined): Set<string> {
  const types = new Set<string>()
  if (!schema) return types
  const visit = (s: Record<string, unknown>) => {
    if (Array.isArray(s.anyOf)) s.anyOf.forEach((branch) => visit(branch as Record<string, unknown>))
    if (typeof s.type === 'string') types.add(s.type)
    if (s.const !== undefined) types.add(typeof s.const === 'string' ? 'string' : String(s.type ?? ''))
  }
  visit(schema)
  return types
}

/** A text field's value in the type its schema property expects (booleans, integers, null for ''). */
function coerceField(value: string, property: Record<string, unknown> | undefined): unknown {
  const types = acceptedTypes(property)
  if (types.has('boolean') && /^(true|false|1|0)$/i.test(value)) return /^(true|1)$/i.test(value)
  if ((types.has('integer') || types.has('number')) && /^-?\d{1,15}$/.test(value)) return Number(value)
  if (types.has('null') && value === '') return null
  return value
}

/** Busboy's own parse errors carry no status; anything unexpected while parsing is a malformed body. */
function toMultipartError(error: unknown): unknown {
  if (error instanceof AppError) return error
  if ((error as { statusCode?: number })?.statusCode) return error
  return badRequest('malformed_body', 'Malformed multipart body')
}

/**
 * preValidation hook for routes that take JSON or multipart/form-data: for multipart, text fields
 * become `request.body` (so the route's schema validates them) and declared file fields are
 * streamed to temporary storage as `request.uploads`. Too large → 413, malformed → 400.
 */
export function multipartBody(options: MultipartBodyOptions): preValidationAsyncHookHandler {
  const storage = createFileStorage(options.storageDir)
  const properties = ((options.schema as Record<string, unknown>).properties ?? {}) as Record<
    string,
    Record<string, unknown>
  >
  const maxBytes = Math.max(...Object.values(options.files).map((f) => f.maxBytes))
  const fileCount = Object.keys(options.files).length
  return async function parseMultipart(request: FastifyRequest) {
    if (!request.isMultipart()) return
    const body: Record<string, unknown> = {}
    const problems = new FieldErrorCollector()
    request.uploads = {}
    try {
      for await (const part of request.parts({
        limits: { fileSize: maxBytes, files: fileCount },
      }) as AsyncIterable<Multipart>) {
        if (part.type === 'file') {
          const limit = options.files[part.fieldname]
          if (!limit || request.uploads[part.fieldname]) {
            part.file.resume()
            problems.add(part.fieldname, limit ? 'only one file may be sent' : 'is not a file field of this request')
            continue
          }
          const stored = await storage.save(UPLOAD_AREA, part.file)
          request.uploads[part.fieldname] = {
            field: part.fieldname,
            clientName: part.filename,
            clientType: part.mimetype,
            area: UPLOAD_AREA,
            name: stored.name,
            size: stored.size,
          }
          if (part.file.truncated || stored.size > limit.maxBytes) {
            throw tooLarge(`The file "${part.fieldname}" is larger than ${limit.maxBytes} bytes`)
          }
        } else if (options.files[part.fieldname]) {
          problems.add(part.fieldname, 'must be sent as a file')
        } else {
          const value = coerceField(String(part.value), properties[part.fieldname])
          const previous = body[part.fieldname]
          body[part.fieldname] =
            previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value]
        }
      }
    } catch (error) {
      throw toMultipartError(error)
    }
    problems.throwIfAny()
    request.body = body
  }
}
