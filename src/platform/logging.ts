import pino, { type Logger } from 'pino'
import pretty from 'pino-pretty'

export type LogFormat = 'json' | 'pretty'

/** Redacted wherever they appear in a log line (a request object, an error's config, a job's meta). */
const REDACT = ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.token', '*.secret']

/**
 * The process logger: JSON lines (one object a line, for collectors), or readable colored lines when
 * `format` is `pretty` — by default when stdout is a terminal. Pretty printing is synchronous in this
 * thread (no transport worker), so a line is never lost on exit.
 */
export function createLogger(options: { level: string; format?: LogFormat; destination?: NodeJS.WritableStream & { isTTY?: boolean } }): Logger {
  const destination = options.destination ?? process.stdout
  const format = options.format ?? (destination.isTTY ? 'pretty' : 'json')
  const base = { level: options.level, redact: { paths: REDACT, censor: '[redacted]' } }
  if (format === 'json') return options.destination ? pino(base, options.destination) : pino(base)
  return pino(base, pretty({ destination, sync: true, colorize: destination.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }))
}
