import { AppError } from '../http/errors.js'
import { thrownFields } from '../thrown.js'

const CONNECTION_FAILURES = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', '53300'])
const NODE_NETWORK_FAILURES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND'])

/** Maps PostgreSQL errors by SQLSTATE (never by message text) to AppErrors; undefined when unknown. */
export function mapPgError(error: unknown): AppError | undefined {
  const code = thrownFields(error).code
  if (!code) {
    if (
      error instanceof Error &&
      /timeout exceeded when trying to connect|Connection terminated/i.test(error.message)
    ) {
      return new AppError(503, 'database_unavailable', 'The database is temporarily unavailable', undefined, {
        'Retry-After': '5',
      })
    }
    return undefined
  }
  if (code === '23505') return new AppError(409, 'conflict', 'A record with these values already exists')
  if (code === '23503') return new AppError(422, 'invalid_reference', 'A referenced record does not exist')
  // class 22 (data exception: NUL bytes 22021, bad escapes 22025, out-of-range values, …) is always
  // caused by the input; 54000 is a value too large to index (e.g. a huge string in a unique column)
  if (code === '23514' || code.startsWith('22') || code === '54000') {
    return new AppError(422, 'validation_failed', 'A value is out of range or malformed')
  }
  if (code === '40001' || code === '40P01')
    return new AppError(409, 'concurrent_update', 'The record was changed concurrently; retry')
  if (code === '57014')
    return new AppError(503, 'query_timeout', 'The request took too long', undefined, { 'Retry-After': '1' })
  // class 08 is "connection exception"; a pooler (PgBouncer) answers 08P01 when it cannot serve the client
  if (CONNECTION_FAILURES.has(code) || code.startsWith('08') || NODE_NETWORK_FAILURES.has(code)) {
    return new AppError(503, 'database_unavailable', 'The database is temporarily unavailable', undefined, {
      'Retry-After': '5',
    })
  }
  return undefined
}

/**
 * A unique violation, of `constraint` when named. On Citus the error comes from a shard: the
 * constraint's name carries the shard id (`users_username_uniq_102087` is `users_username_uniq`), and
 * an error relayed from a worker has no constraint field at all — the name is then only in the
 * message (`… violates unique constraint "users_username_uniq_102087"`), the one case read from text.
 */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const pgError = thrownFields(error)
  if (pgError.code !== '23505') return false
  if (constraint === undefined) return true
  const name = pgError.constraint ?? /["»“]([A-Za-z0-9_]+)["«”]\s*$/.exec(pgError.message ?? '')?.[1]
  if (name === undefined || name === constraint) return name === constraint
  return name.startsWith(`${constraint}_`) && /^\d+$/.test(name.slice(constraint.length + 1))
}
