import { type CompiledQuery, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'

/** Tables of content a person writes (`user_id` = the author), as content.json names them. */
export const CONTENT_TABLES = [
  'infoboard_posts',
  'infoboard_comments',
  'form_messages',
  'manual_chapters',
  'manual_entries',
  'calendar_events',
  'task_executions',
  'forms',
  'filemanager_directories',
  'filemanager_files',
] as const

export const findDataExport = (db: Db, tenantId: number, id: number) =>
  db
    .selectFrom('data_exports')
    .select(['id', 'user_id', 'requested_by', 'status', 'size', 'file_name', 'created_at', 'ready_at', 'expires_at'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst()

/** The user an export is asked for (blacked-out ones included: the caller refuses them). */
export const findExportedUser = (db: Db, tenantId: number, userId: number) =>
  db
    .selectFrom('users')
    .select(['id', 'blacked_out_at'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .executeTakeFirst()

export const insertDataExport = (db: Db, tenantId: number, userId: number, requestedBy: number | null) =>
  db
    .insertInto('data_exports')
    .values({ tenant_id: tenantId, user_id: userId, requested_by: requestedBy })
    .returning(['id', 'user_id', 'status', 'size', 'created_at', 'ready_at', 'expires_at'])
    .executeTakeFirstOrThrow()

/** The tenant's exports as the base of the list (alias `e`); `ofUser` keeps those of or asked by that user. */
export function selectDataExports(db: Db, tenantId: number, ofUser?: number) {
  const base = db.selectFrom('data_exports as e').where('e.tenant_id', '=', tenantId)
  return ofUser === undefined
    ? base
    : base.where((eb) => eb.or([eb('e.user_id', '=', ofUser), eb('e.requested_by', '=', ofUser)]))
}

/** A new download link (its token's hash) for a ready export, valid `minutes`; undefined when not ready. */
export const setDownloadLink = (db: Db, tenantId: number, id: number, linkHash: Buffer, minutes: number) =>
  db
    .updateTable('data_exports')
    .set({ link_hash: linkHash, link_expires_at: sql<string>`now() + make_interval(mins => ${minutes})` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('status', '=', 'ready')
    .returning('link_expires_at')
    .executeTakeFirst()

/** Consumes a ready export's unexpired link of that hash: its archive's file name and user, else undefined. */
export const consumeDownloadLink = (db: Db, tenantId: number, id: number, linkHash: Buffer) =>
  db
    .updateTable('data_exports')
    .set({ link_hash: null, link_expires_at: null })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('status', '=', 'ready')
    .where('link_hash', '=', linkHash)
    .where('link_expires_at', '>', sql<string>`now()`)
    .returning(['file_name', 'user_id'])
    .executeTakeFirst()

export const markExportReady = (
  db: Db,
  tenantId: number,
  id: number,
  stored: { name: string; size: number },
  keepDays: number,
) =>
  db
    .updateTable('data_exports')
    .set({
      status: 'ready',
      file_name: stored.name,
      size: stored.size,
      ready_at: sql<string>`now()`,
      expires_at: sql<string>`now() + make_interval(days => ${keepDays})`,
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute()

export const markExportFailed = (db: Db, tenantId: number, id: number, error: string) =>
  db
    .updateTable('data_exports')
    .set({ status: 'failed', error })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute()

/** Ready exports past their days, any tenant (the sweep's batch). */
export const selectExpiredExports = (db: Db, limit: number) =>
  db
    .selectFrom('data_exports')
    .select(['tenant_id', 'id', 'file_name'])
    .where('status', '=', 'ready')
    .where('expires_at', '<', sql<string>`now()`)
    .limit(limit)
    .execute()

export const markExportExpired = (db: Db, tenantId: number, id: number) =>
  db
    .updateTable('data_exports')
    .set({ status: 'expired', file_name: null, link_hash: null, link_expires_at: null })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute()

/** Deletes the person's export rows; returns their archives' file names. */
export const deleteExportsOf = (db: Db, tenantId: number, userId: number) =>
  db
    .deleteFrom('data_exports')
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .returning('file_name')
    .execute()

export const findRoleName = (db: Db, tenantId: number, roleId: number) =>
  db
    .selectFrom('roles')
    .select(['id', 'name'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', roleId)
    .executeTakeFirst()

/** The person's notifications, newest first, in the order of the inbox's index (streamed by the caller). */
export const notificationsOfQuery = (
  db: Db,
  tenantId: number,
  userId: number,
): CompiledQuery<Record<string, unknown>> =>
  sql<Record<string, unknown>>`
    select id, type, targetable_type, targetable_id, data, seen_at, read_at, created_at
    from notifications
    where tenant_id = ${tenantId} and notifiable_id = ${userId} and notifiable_type = 'user'
    order by created_at desc nulls last, id desc nulls last`.compile(db)

export const notificationPreferencesOf = (db: Db, tenantId: number, userId: number) =>
  db
    .selectFrom('notification_preferences as p')
    .innerJoin('notification_settings as s', (j) =>
      j.onRef('s.tenant_id', '=', 'p.tenant_id').onRef('s.id', '=', 'p.notification_setting_id'),
    )
    .select(['s.key', 'p.push', 'p.email'])
    .where('p.tenant_id', '=', tenantId)
    .where('p.user_id', '=', userId)
    .orderBy('s.key')
    .execute()

/** The person's sessions with their last activity (never a token). */
export const sessionsOf = (db: Db, tenantId: number, userId: number) =>
  db
    .selectFrom('access_tokens as t')
    .leftJoin('session_activity as a', (j) =>
      j.onRef('a.tenant_id', '=', 't.tenant_id').onRef('a.token_id', '=', 't.id'),
    )
    .select([
      't.id',
      't.device_name',
      't.created_at',
      't.expires_at',
      't.revoked_at',
      'a.last_used_at',
      'a.ip',
      'a.user_agent',
    ])
    .where('t.tenant_id', '=', tenantId)
    .where('t.user_id', '=', userId)
    .orderBy('t.id')
    .execute()

export const pushSubscriptionsOf = (db: Db, tenantId: number, userId: number) =>
  db
    .selectFrom('push_subscriptions')
    .select(['id', 'endpoint', 'user_agent', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .orderBy('id')
    .execute()

/** Audit entries of changes the person made and of changes about them (streamed by the caller). */
export const auditOfQuery = (db: Db, tenantId: number, userId: number): CompiledQuery<Record<string, unknown>> =>
  sql<Record<string, unknown>>`
    select id, created_at, action, target_type, target_id, changes, actor_id, ip, user_agent
    from audit_log
    where tenant_id = ${tenantId}
      and (actor_id = ${userId} or (target_type = 'user' and target_id = ${String(userId)}))
    order by id`.compile(db)

/** The person's rows of one content table, whole. */
export const contentRowsOf = async (db: Db, table: (typeof CONTENT_TABLES)[number], tenantId: number, userId: number) =>
  (
    await sql<Record<string, unknown>>`
      select * from ${sql.table(table)} where tenant_id = ${tenantId} and user_id = ${userId} order by id`.execute(db)
  ).rows

/** The files the person uploaded (their stored names, for the archive). */
export const uploadedFilesOf = async (db: Db, tenantId: number, userId: number) =>
  (
    await sql<{ id: string; name: string; storage_name: string }>`
      select id, name, storage_name from filemanager_files
      where tenant_id = ${tenantId} and user_id = ${userId} order by id`.execute(db)
  ).rows
