import { Ajv, type ErrorObject } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { Static, TSchema } from 'typebox'

// eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- ajv-formats' CommonJS default export, typed for ESM interop
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

export interface ValidatorOptions {
  /** Query strings and params are coerced (`'array'`); JSON bodies and values of our own never. */
  coerceTypes?: boolean | 'array'
  /** Fill in schema defaults (request parts only: a check of a value of our own must not change it). */
  useDefaults?: boolean
}

/**
 * The project's one validator factory: every schema check (Fastify's request validation, CSV rows,
 * SCIM bodies and responses) goes through an ajv made here. All errors, with the failing schema
 * attached (`verbose`) for readable messages (http/validation-messages.ts); unknown keys are rejected
 * (422), never silently dropped (`removeAdditional: false`).
 */
export function createAjv({ coerceTypes = false, useDefaults = false }: ValidatorOptions = {}): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    verbose: true,
    removeAdditional: false,
    useDefaults,
    coerceTypes,
    strict: false,
  })
  addFormats(ajv)
  return ajv
}

/** A compiled check of one schema, shaped like TypeBox's compiled validator (`Check`, `Errors`). */
export interface Validator<T> {
  Check(value: unknown): value is T
  /** Why `value` fails the schema (empty when it passes), as ajv reports it. */
  Errors(value: unknown): ErrorObject[]
}

const plain = createAjv()

/** Compiles `schema` once (at module load of its user) with the project's settings, no coercion, no defaults. */
export function compileValidator<T extends TSchema>(schema: T): Validator<Static<T>> {
  const validate = plain.compile<Static<T>>(schema)
  return {
    Check: (value): value is Static<T> => validate(value),
    Errors: (value) => (validate(value) ? [] : [...(validate.errors ?? [])]),
  }
}
