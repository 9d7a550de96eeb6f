import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError } from './errors.js'

/** How deeply a JSON body may nest objects and arrays: far beyond any real body, far below a stack overflow. */
export const MAX_JSON_DEPTH = 64

/** Whether `text` (JSON) nests objects/arrays deeper than `limit`: one pass, strings skipped. */
export function nestsDeeperThan(text: string, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > limit) return true
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--
  }
  return false
}

type Parser = (request: FastifyRequest, body: string, done: (error: Error | null, value?: unknown) => void) => void

/**
 * The JSON body parser of every route (issue 39): Fastify's own (prototype poisoning refused) after a
 * nesting check, so that a 5,000-level value is a 400 `body_too_deep`, never a stack overflow (500)
 * in code that walks it. `contentTypes` names the media types (SCIM adds application/scim+json).
 */
export function boundedJsonParser(app: FastifyInstance): Parser {
  const parse = app.getDefaultJsonParser('error', 'error')
  return (request, body, done) => {
    if (nestsDeeperThan(body))
      return done(
        new AppError(400, 'body_too_deep', `The JSON body nests deeper than ${MAX_JSON_DEPTH} levels`, {
          body: [`nests deeper than ${MAX_JSON_DEPTH} levels`],
        }),
      )
    void parse(request, body, done)
  }
}

/** Replaces the default application/json parser of `app` by the bounded one. */
export function registerJsonBody(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, boundedJsonParser(app))
}
