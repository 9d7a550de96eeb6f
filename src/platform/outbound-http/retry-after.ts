/** A `Retry-After` header (delay-seconds or an HTTP date) in milliseconds, capped at `maxMs`; undefined when absent or past. */
export function retryAfterMs(value: string | string[] | undefined, maxMs: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value
  if (!raw) return undefined
  const ms = /^\d+$/.test(raw) ? Number(raw) * 1000 : Date.parse(raw) - Date.now()
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, maxMs) : undefined
}
