import type { FastifyInstance } from 'fastify'
import { createAjv } from '../validation/validator.js'

/** JSON bodies are validated strictly (no type coercion); query strings and params are coerced; both take defaults. */
export function registerValidation(app: FastifyInstance): void {
  const strict = createAjv({ coerceTypes: false, useDefaults: true })
  const coercing = createAjv({ coerceTypes: 'array', useDefaults: true })
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema))
}
