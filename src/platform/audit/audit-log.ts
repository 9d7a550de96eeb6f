import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../db/schema.js'
import { insertedRows } from '../db/database.js'
import { currentRequestContext } from './request-context.js'

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

/**
 * Records an administrative change. Pass the change's transaction: the record commits or rolls back
 * with it. Actor, request id, IP and user agent come from the request context (null from CLI/jobs).
 */
export async function recordAudit(db: Db, entry: AuditEntry): Promise<void> {
  await recordAudits(db, [entry])
}

/** `recordAudit` for several changes of one request, in one statement. */
export async function recordAudits(db: Db, entries: AuditEntry[]): Promise<void> {
  if (entries.length === 0) return
  await auditInsert(entries[0]!.tenantId, auditColumns(entries)).execute(db)
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

/**
 * The insert of audit records, to execute or to run inside another statement (e.g. an event insert),
 * only when `onlyIf` holds: from arrays, so that its text is the same whatever the number of records
 * (and the columns may be a `shapedStatement`'s stand-ins).
 */
export function auditInsert(
  tenantId: number,
  columns: AuditColumns,
  onlyIf?: RawBuilder<boolean>,
): RawBuilder<unknown> {
  return sql`insert into audit_log (tenant_id, action, target_type, target_id, changes, actor_id, actor, request_id, ip, user_agent)
    ${insertedRows({
      alias: 'a',
      leading: [sql`${tenantId}::bigint`],
      columns: [
        { name: 'action', type: 'text', values: columns.action },
        { name: 'target_type', type: 'text', values: columns.targetType },
        { name: 'target_id', type: 'text', values: columns.targetId },
        { name: 'changes', type: 'jsonb', values: columns.changes },
        { name: 'actor_id', type: 'bigint', values: columns.actorId },
        { name: 'actor', type: 'text', values: columns.actor },
        { name: 'request_id', type: 'text', values: columns.requestId },
        { name: 'ip', type: 'text', values: columns.ip },
        { name: 'user_agent', type: 'text', values: columns.userAgent },
      ],
      ordered: true,
      onlyIf,
    })}`
}

/**
 * Fields of a user's audit records that identify nobody and survive a black-out: every other field's
 * before → after values (names, addresses, dates, contact data, picture, …) are replaced, so that a
 * field added to users later is anonymized unless it is listed here.
 */
const NON_IDENTIFYING_USER_FIELDS = [
  'changed',
  'role_id',
  'active',
  'active_derived',
  'lang_id',
  'group_account',
  'prevent_logout',
  'wants_email_notifications',
  'password_change_required',
  'deleted_at',
  'logout_requested_at',
]
export const BLACKED_OUT = 'blacked-out'

/**
 * A black-out irreversibly anonymizes the user's identifying data in the audit log too: the values
 * of records about the user (except the fields above), and the IP and user agent of requests the
 * user made, and of their sign-in attempts. Ids are kept.
 */
export async function anonymizeAuditFor(db: Db, tenantId: number, userId: number): Promise<void> {
  await db
    .updateTable('audit_log')
    .set({
      changes: sql`(select coalesce(jsonb_object_agg(e.k, case when e.k = any(${NON_IDENTIFYING_USER_FIELDS}::text[]) then e.v else to_jsonb(${BLACKED_OUT}::text) end), '{}')
        from jsonb_each(changes) as e(k, v))`,
    })
    .where('tenant_id', '=', tenantId)
    .where('target_type', '=', 'user')
    .where('target_id', '=', String(userId))
    .execute()
  await db
    .updateTable('audit_log')
    .set({ ip: null, user_agent: null })
    .where('tenant_id', '=', tenantId)
    .where('actor_id', '=', userId)
    .execute()
  // the person's own sign-in attempts (no actor yet): their address and browser
  await db
    .updateTable('audit_log')
    .set({ ip: null, user_agent: null })
    .where('tenant_id', '=', tenantId)
    .where('target_type', '=', 'user')
    .where('target_id', '=', String(userId))
    .where('actor_id', 'is', null)
    .where('action', 'like', 'auth.%')
    .execute()
}

/** Deletes audit records older than the retention (job `audit:purge`). */
export async function purgeAuditLog(db: Db, retentionDays: number): Promise<number> {
  const result = await db
    .deleteFrom('audit_log')
    .where('created_at', '<', sql<string>`now() - make_interval(days => ${retentionDays})`)
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}
