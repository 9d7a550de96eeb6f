import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifyInstance } from 'fastify'

// eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- ajv-formats' CommonJS default export, typed for ESM interop
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

/** The project's ajv: all errors, with the failing schema attached (`verbose`) for readable messages. */
export function createAjv(coerceTypes: boolean | 'array' = false): Ajv {
  // removeAdditional: false — unknown body keys are rejected (422), never silently dropped.
  const ajv = new Ajv({
    allErrors: true,
    verbose: true,
    removeAdditional: false,
    useDefaults: true,
    coerceTypes,
    strict: false,
  })
  addFormats(ajv)
  return ajv
}

/** JSON bodies are validated strictly (no type coercion); query strings and params are coerced. */
export function registerValidation(app: FastifyInstance): void {
  const strict = createAjv(false)
  const coercing = createAjv('array')
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema))
}
