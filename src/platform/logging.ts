import type { FastifyBaseLogger } from 'fastify'
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
export function createLogger(options: {
  level: string
  format?: LogFormat
  destination?: NodeJS.WritableStream & { isTTY?: boolean }
}): Logger {
  const destination = options.destination ?? process.stdout
  const format = options.format ?? (destination.isTTY ? 'pretty' : 'json')
  const base = { level: options.level, redact: { paths: REDACT, censor: '[redacted]' } }
  if (format === 'json') return options.destination ? pino(base, options.destination) : pino(base)
  return pino(
    base,
    pretty({
      destination,
      sync: true,
      colorize: destination.isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
    }),
  )
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1]
/** Whether `logger` writes lines of `level` (a logger that cannot tell writes them all). */
export const levelEnabled = (logger: FastifyBaseLogger, level: string) =>
  'isLevelEnabled' in logger && typeof logger.isLevelEnabled === 'function'
    ? (logger.isLevelEnabled(level) ?? true)
    : true

/**
 * A request's logger (`request.log`), made into a pino child with its request id only when the
 * request logs a line at an enabled level: most requests log nothing at `warn`, and a child per
 * request (its bindings serialized) cost a few per cent of a short request's CPU.
 */
export class LazyChildLogger {
  readonly #parent: FastifyBaseLogger
  readonly #bindings: Record<string, unknown>
  readonly #options: ChildOptions
  #child: FastifyBaseLogger | undefined

  constructor(parent: FastifyBaseLogger, bindings: Record<string, unknown>, options: ChildOptions) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
  }

  #real(): FastifyBaseLogger {
    return (this.#child ??= this.#parent.child(this.#bindings, this.#options))
  }

  #log(level: Level, args: unknown[]): void {
    if (levelEnabled(this.#parent, level)) (this.#real()[level] as (...a: unknown[]) => void)(...args)
  }

  get level(): string {
    return this.#real().level
  }
  set level(value: string) {
    this.#real().level = value
  }
  isLevelEnabled(level: string): boolean {
    return levelEnabled(this.#parent, level)
  }
  child(bindings: Record<string, unknown>, options?: ChildOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options)
  }
  fatal(...args: unknown[]): void {
    this.#log('fatal', args)
  }
  error(...args: unknown[]): void {
    this.#log('error', args)
  }
  warn(...args: unknown[]): void {
    this.#log('warn', args)
  }
  info(...args: unknown[]): void {
    this.#log('info', args)
  }
  debug(...args: unknown[]): void {
    this.#log('debug', args)
  }
  trace(...args: unknown[]): void {
    this.#log('trace', args)
  }
  silent(): void {}
}
