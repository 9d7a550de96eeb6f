import type { FastifyInstance } from 'fastify'
import { AppError } from './errors.js'

interface SchemaLike {
  properties?: Record<string, unknown>
  allOf?: SchemaLike[]
  anyOf?: SchemaLike[]
}

const allowedKeysCache = new WeakMap<object, string[]>()

/** The top-level keys a querystring schema declares (objects, and the members of an intersection). */
export function declaredQueryKeys(schema: unknown): string[] {
  if (!schema || typeof schema !== 'object') return []
  const cached = allowedKeysCache.get(schema)
  if (cached) return cached
  const s = schema as SchemaLike
  const keys = new Set<string>(Object.keys(s.properties ?? {}))
  for (const part of [...(s.allOf ?? []), ...(s.anyOf ?? [])]) for (const key of declaredQueryKeys(part)) keys.add(key)
  const result = [...keys]
  allowedKeysCache.set(schema, result)
  return result
}

/**
 * Every route accepts exactly the query keys its schema declares: an unknown key (`?username=anna` for
 * `filter[username]=anna`, a typo such as `?limt=5`) is a 422 naming it and listing the allowed keys,
 * so that a client never receives unfiltered data for a filter it got wrong.
 */
export function registerStrictQueryKeys(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    const query: unknown = request.query
    if (!query || typeof query !== 'object') return done()
    const keys = Object.keys(query)
    if (keys.length === 0 || request.url.startsWith('/docs') || /^\/app(\/|\?|$)/.test(request.url)) return done()
    const allowed = declaredQueryKeys(request.routeOptions.schema?.querystring)
    const unknown = keys.filter((key) => !allowed.includes(key))
    if (unknown.length === 0) return done()
    const hint = allowed.length === 0 ? 'this route takes no query parameters' : `allowed: ${allowed.join(', ')}`
    const errors = Object.fromEntries(unknown.map((key) => [key, [`is not a query parameter of this route (${hint})`]]))
    done(
      new AppError(
        422,
        'validation_failed',
        `Unknown query parameter ${unknown.map((k) => `"${k}"`).join(', ')}; ${hint}`,
        errors,
      ),
    )
  })
}
