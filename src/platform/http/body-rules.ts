import type { FastifyRequest } from 'fastify'
import type { FieldErrors } from './errors.js'

/** Rules a schema cannot express (they read the database), checked on the raw body. */
export type BodyRules = (request: FastifyRequest) => Promise<FieldErrors | undefined>

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Run when the body fails schema validation, so that the 422 names every wrong field at once
     * (e.g. a password shorter than the tenant's minimum next to a malformed email). When the schema
     * passes, the service checks the same rules itself.
     */
    bodyRules?: BodyRules
  }
}

/** The route's body-rule errors for a request whose body failed validation (a failing rule adds nothing). */
export async function bodyRuleErrors(request: FastifyRequest): Promise<FieldErrors | undefined> {
  const rules = request.routeOptions.config.bodyRules
  if (!rules || !request.body || typeof request.body !== 'object') return undefined
  return rules(request).catch(() => undefined)
}
