import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import { AppError, type FieldErrors } from './errors.js'
import { mapPgError } from '../db/pg-errors.js'
import { validationErrors, type AjvIssue } from './validation-messages.js'
import { bodyRuleErrors } from './body-rules.js'

export interface ProblemDetails {
  type: string
  title: string
  status: number
  detail: string
  code: string
  errors?: FieldErrors
}

export { validationErrors } from './validation-messages.js'

export function problem(status: number, code: string, detail: string, errors?: FieldErrors): ProblemDetails {
  return {
    type: 'about:blank',
    title: STATUS_CODES[status] ?? 'Error',
    status,
    detail,
    code,
    ...(errors ? { errors } : {}),
  }
}

/** The problem code each error answer carried (the request log line names it). */
const problemCodes = new WeakMap<FastifyReply, string>()
export const problemCodeOf = (reply: FastifyReply): string | undefined => problemCodes.get(reply)

export function sendProblem(reply: FastifyReply, body: ProblemDetails, headers?: Record<string, string>): FastifyReply {
  problemCodes.set(reply, body.code)
  if (headers) reply.headers(headers)
  // a too-large upload is refused without reading the rest of it: the connection closes after the answer
  if (body.status === 413) reply.header('connection', 'close')
  return reply.code(body.status).type('application/problem+json').serializer(JSON.stringify).send(body)
}

const FASTIFY_CODES: Record<string, [number, string, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'unsupported_media_type', 'This content type is not supported here'],
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'payload_too_large', 'The request body is too large'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'malformed_body', 'The JSON body is empty'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'malformed_body', 'The JSON body is malformed'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'malformed_body', 'Content-Length does not match the body'],
  FST_REQ_FILE_TOO_LARGE: [413, 'payload_too_large', 'The uploaded file is too large'],
  FST_PARTS_LIMIT: [413, 'payload_too_large', 'Too many multipart parts'],
  FST_FILES_LIMIT: [413, 'payload_too_large', 'Too many files in the upload'],
  FST_FIELDS_LIMIT: [413, 'payload_too_large', 'Too many fields in the upload'],
  FST_PROTO_VIOLATION: [400, 'malformed_body', 'Malformed multipart body'],
  FST_INVALID_MULTIPART_CONTENT_TYPE: [415, 'unsupported_media_type', 'Expected multipart/form-data'],
  FST_ERR_QS_LIMIT: [400, 'malformed_query', 'The query string has too many parameters'],
}

/** Maps any thrown error to problem details. Unknown errors become a 500 that reveals nothing. */
export function toProblem(error: unknown): {
  body: ProblemDetails
  headers?: Record<string, string>
  unexpected: boolean
} {
  if (error instanceof AppError) {
    return {
      body: { ...error.extensions, ...problem(error.status, error.code, error.message, error.errors) },
      headers: error.headers,
      unexpected: false,
    }
  }
  const fastifyError = error as FastifyError & { validationContext?: string }
  if (fastifyError?.validation) {
    if (fastifyError.validationContext === 'params') {
      return { body: problem(404, 'not_found', 'Resource not found'), unexpected: false }
    }
    const errors = validationErrors(fastifyError.validation as AjvIssue[])
    return { body: problem(422, 'validation_failed', 'The given data was invalid', errors), unexpected: false }
  }
  const known = fastifyError?.code ? FASTIFY_CODES[fastifyError.code] : undefined
  if (known) return { body: problem(known[0], known[1], known[2]), unexpected: false }
  const mapped = mapPgError(error)
  if (mapped)
    return {
      body: problem(mapped.status, mapped.code, mapped.message, mapped.errors),
      headers: mapped.headers,
      unexpected: false,
    }
  const status = fastifyError?.statusCode
  if (status && status >= 400 && status < 500) {
    const code = fastifyError.code ? fastifyError.code.toLowerCase().replace(/^fst_(err_)?/, '') : 'bad_request'
    return { body: problem(status, code, STATUS_CODES[status] ?? 'Bad request'), unexpected: false }
  }
  return { body: problem(500, 'internal_error', 'An unexpected error occurred'), unexpected: true }
}

/** The one error handler and not-found handler of the app. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(async (error, request, reply) => {
    const { body, headers, unexpected } = toProblem(error)
    if (body.errors && (error as { validationContext?: string }).validationContext === 'body') {
      for (const [field, messages] of Object.entries((await bodyRuleErrors(request)) ?? {})) {
        const list = (body.errors[field] ??= [])
        for (const message of messages) if (!list.includes(message)) list.push(message)
      }
    }
    if (unexpected) request.log.error({ err: error }, 'unexpected error')
    else if (body.status >= 500) request.log.warn({ code: body.code }, body.detail)
    return sendProblem(reply, body, headers)
  })
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, problem(404, 'not_found', `No route for ${request.method} ${request.url.split('?')[0]}`)),
  )
}
