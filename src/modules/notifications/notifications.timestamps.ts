import { FieldErrorCollector } from '../../platform/http/errors.js'

const FORM = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/

/**
 * Parses `YYYY-MM-DD HH:MM:SS` (UTC) or ISO 8601 (zone honoured, UTC when absent); undefined when
 * the value is not a real calendar time (e.g. 2024-02-30 or 25:00).
 */
export function parseTimestampInput(raw: string): Date | undefined {
  const m = FORM.exec(raw)
  if (!m) return undefined
  const [, y, mo, d, h = '00', mi = '00', s = '00', fraction = '', zone = 'Z'] = m
  if (Number(mo) < 1 || Number(mo) > 12 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)))
  if (day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d)) return undefined
  const normalizedZone = zone === 'Z' ? 'Z' : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}${fraction.slice(0, 4)}${normalizedZone}`)
  return Number.isNaN(date.getTime()) ? undefined : date
}

/** seen_at / read_at from a body: at least one present; each a valid timestamp (or null when allowed). */
export function parseSeenRead(body: { seen_at?: string | null; read_at?: string | null }): {
  seenAt?: Date | null
  readAt?: Date | null
} {
  const problems = new FieldErrorCollector()
  if (body.seen_at === undefined && body.read_at === undefined) {
    problems.add('seen_at', 'seen_at or read_at is required')
    problems.add('read_at', 'seen_at or read_at is required')
  }
  const parse = (field: 'seen_at' | 'read_at') => {
    const value = body[field]
    if (value === undefined || value === null) return value
    const date = parseTimestampInput(value)
    if (!date) problems.add(field, 'must be a timestamp (YYYY-MM-DD HH:MM:SS or ISO 8601)')
    return date
  }
  const seenAt = parse('seen_at')
  const readAt = parse('read_at')
  problems.throwIfAny()
  return { seenAt, readAt }
}
