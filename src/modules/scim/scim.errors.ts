import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import { toProblem } from '../../platform/http/error-handler.js'

export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error'
export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8'

/** RFC 7644 §3.12 `scimType` values this service provider answers with. */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive'

/** An error answered as an RFC 7644 error body (thrown by the SCIM module only). */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly scimType?: ScimType,
  ) {
    super(message)
    this.name = 'ScimError'
  }
}

export interface ScimErrorBody {
  schemas: string[]
  status: string
  scimType?: ScimType
  detail: string
}

export const scimNotFound = (what: string) => new ScimError(404, `${what} not found`)

/** The RFC 7644 answer to any error thrown under /scim/v2 (the API's own errors are translated). */
export function toScimError(error: unknown): {
  body: ScimErrorBody
  unexpected: boolean
  headers?: Record<string, string>
} {
  if (error instanceof ScimError) {
    const body: ScimErrorBody = { schemas: [SCIM_ERROR_SCHEMA], status: String(error.status), detail: error.message }
    if (error.scimType) body.scimType = error.scimType
    return { body, unexpected: false }
  }
  const { body: problem, headers, unexpected } = toProblem(error)
  let status = problem.status
  let scimType: ScimType | undefined
  const fields = problem.errors
    ? Object.entries(problem.errors)
        .map(([field, messages]) => `${field}: ${messages.join(', ')}`)
        .join('; ')
    : ''
  let detail = fields ? `${problem.detail} (${fields})` : problem.detail
  if (status === 409) scimType = 'uniqueness'
  else if (status === 422) {
    status = 400
    scimType = 'invalidValue'
  } else if (status === 400 || status === 415) {
    // a malformed JSON body, a query string the parser refused, a media type we do not read
    status = 400
    scimType = 'invalidSyntax'
  } else if (status === 401) detail = 'Authentication required: send a valid SCIM bearer token'
  const body: ScimErrorBody = { schemas: [SCIM_ERROR_SCHEMA], status: String(status), detail }
  if (scimType) body.scimType = scimType
  return { body, unexpected, headers }
}

export function sendScimError(reply: FastifyReply, error: unknown): FastifyReply {
  const { body, headers, unexpected } = toScimError(error)
  if (unexpected) reply.log.error({ err: error }, 'unexpected error')
  if (headers) reply.headers(headers)
  return reply.code(Number(body.status)).type(SCIM_CONTENT_TYPE).serializer(JSON.stringify).send(body)
}

/** The SCIM scope's error and not-found handlers: RFC 7644 bodies instead of problem+json. */
export function registerScimErrorHandling(scope: FastifyInstance): void {
  scope.setErrorHandler((error: FastifyError, _request, reply) => sendScimError(reply, error))
  scope.setNotFoundHandler((request, reply) =>
    sendScimError(reply, new ScimError(404, `No SCIM endpoint ${request.method} ${request.url.split('?')[0]}`)),
  )
}
