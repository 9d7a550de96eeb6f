import { currentRequestContext } from '../../platform/audit/request-context.js'

export interface AuditEntry {
  tenantId: number
  /** Stable dotted name, e.g. `user.blackout`, `entity_permission.create`. */
  action: string
  targetType: string
  targetId: number | string | null
  /** Changed fields: `{ field: [before, after] }`, or a summary such as `{ detached: 3 }`. */
  changes?: Record<string, unknown>
}

/** Never stored in an audit record, whatever the call site passes. */
const SECRET_FIELD = /password(?!_change_required)|secret|token|hash|private|credential|^value$/i
export const REDACTED = '[redacted]'

/** A `JSON.stringify` replacer: the value of a secret-looking key, at any depth, is replaced. */
const redactSecrets = (key: string, value: unknown): unknown =>
  key !== '' && SECRET_FIELD.test(key) ? REDACTED : value

/** JSON with object keys sorted (jsonb does not keep key order), dates as ISO strings. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  )
}

/** A stored value as the audit record shows it (a Date as its ISO string). */
const plain = (value: unknown): unknown => (value instanceof Date ? value.toISOString() : (value ?? null))

/**
 * `{field: [before, after]}` for the fields of `after` whose value differs from `before` (JSON
 * equality, key order ignored); `undefined` values of `after` were not sent and are skipped.
 * `before` is the stored row read in the change's transaction (undefined for a create).
 */
export function diff(before: object | undefined, after: object): Record<string, [unknown, unknown]> {
  const changes: Record<string, [unknown, unknown]> = {}
  for (const [field, value] of Object.entries(after)) {
    if (value === undefined) continue
    const now = plain(value)
    // a create: every field with a value changed (from null), no comparison needed
    if (before === undefined) {
      if (now !== null) changes[field] = [null, now]
      continue
    }
    const old = plain(Reflect.get(before, field))
    if (canonical(old) !== canonical(now)) changes[field] = [old, now]
  }
  return changes
}

/** Audit records as their insert takes them: one array per column, the request context on every record. */
export interface AuditColumns {
  action: string[]
  targetType: string[]
  targetId: Array<string | null>
  changes: string[]
  actorId: Array<number | null>
  actor: Array<string | null>
  requestId: Array<string | null>
  ip: Array<string | null>
  userAgent: Array<string | null>
}

/** The records' columns (at least one record, of one tenant); actor, request id, IP and user agent from the request context. */
export function auditColumns(entries: AuditEntry[]): AuditColumns {
  if (entries.some((entry) => entry.tenantId !== entries[0]!.tenantId))
    throw new Error('auditColumns: the records of one insert belong to one tenant')
  const context = currentRequestContext()
  const each = <T>(value: T) => entries.map(() => value)
  return {
    action: entries.map((e) => e.action),
    targetType: entries.map((e) => e.targetType),
    targetId: entries.map((e) => (e.targetId === null ? null : String(e.targetId))),
    changes: entries.map((e) => JSON.stringify(e.changes ?? {}, redactSecrets)),
    actorId: each(context.actorId),
    actor: each(context.actor),
    requestId: each(context.requestId),
    ip: each(context.ip),
    userAgent: each(context.userAgent),
  }
}
