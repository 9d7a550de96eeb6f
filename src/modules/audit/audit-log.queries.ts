import { type RawBuilder, sql } from 'kysely'
import { insertedRows } from '../../platform/db/database.js'
import type { Db } from '../../platform/db/schema.js'
import { auditColumns, type AuditColumns, type AuditEntry } from './audit-log.js'

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
