/**
 * The fields code reads off a thrown value. Anything may be thrown (an Error with a `code`, a pg or
 * Fastify error, a string), so each field is taken only when it has the type it is read as.
 */
export interface ThrownFields {
  code?: string
  name?: string
  message?: string
  constraint?: string
  statusCode?: number
  validation?: unknown[]
  validationContext?: string
  cause?: unknown
}

export function thrownFields(error: unknown): ThrownFields {
  if (typeof error !== 'object' || error === null) return {}
  const field = (name: string): unknown => (name in error ? Reflect.get(error, name) : undefined)
  const text = (name: string) => {
    const value = field(name)
    return typeof value === 'string' ? value : undefined
  }
  const statusCode = field('statusCode')
  const validation = field('validation')
  return {
    code: text('code'),
    name: text('name'),
    message: text('message'),
    constraint: text('constraint'),
    statusCode: typeof statusCode === 'number' ? statusCode : undefined,
    validation: Array.isArray(validation) ? validation : undefined,
    validationContext: text('validationContext'),
    cause: field('cause'),
  }
}
