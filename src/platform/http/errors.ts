export type FieldErrors = Record<string, string[]>

/** The one error type. The central handler renders it as RFC 9457 problem+json. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly errors?: FieldErrors,
    readonly headers?: Record<string, string>,
    /** RFC 9457 extension members added to the problem (e.g. `mfa_token`). */
    readonly extensions?: Record<string, string | number | boolean>,
  ) {
    super(message)
    this.name = 'AppError'
  }
}

export const notFound = (resource = 'Resource') => new AppError(404, 'not_found', `${resource} not found`)
export const forbidden = (message = 'You are not allowed to do this', code = 'forbidden') =>
  new AppError(403, code, message)
export const unauthorized = () =>
  new AppError(401, 'unauthenticated', 'Authentication required: send a valid bearer token')
export const conflict = (code: string, message: string, errors?: FieldErrors) =>
  new AppError(409, code, message, errors)
export const badRequest = (code: string, message: string) => new AppError(400, code, message)
export const tooLarge = (message = 'The request body or upload is too large') =>
  new AppError(413, 'payload_too_large', message)

/** A 422 naming each offending field (dotted path) with its messages. */
export function invalid(
  errors: FieldErrors,
  message = 'The given data was invalid',
  code = 'validation_failed',
): AppError {
  return new AppError(422, code, message, errors)
}

/** Convenience for one offending field. */
export function invalidField(field: string, message: string, code = 'validation_failed'): AppError {
  return invalid({ [field]: [message] }, message, code)
}

/** Collects field errors across a whole input, then throws them all at once. */
export class FieldErrorCollector {
  /** No prototype: field names may come from the client (`constructor`, `__proto__`). */
  readonly errors: FieldErrors = Object.create(null)
  add(field: string, message: string): void {
    ;(this.errors[field] ??= []).push(message)
  }
  get isEmpty(): boolean {
    return Object.keys(this.errors).length === 0
  }
  throwIfAny(message?: string): void {
    if (!this.isEmpty) throw invalid(this.errors, message)
  }
}
