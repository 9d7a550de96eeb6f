import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs/promises'
import { Readable } from 'node:stream'
import { type CompiledQuery, sql } from 'kysely'
import yazl from 'yazl'
import { enqueueNotifications } from '../notifications/index.js'
import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { Db } from '../../platform/db/schema.js'
import { streamCompiled } from '../../platform/db/database.js'
import { AppError, forbidden, notFound } from '../../platform/http/errors.js'
import { enqueue } from '../../platform/jobs/jobs.js'
import { defineResource } from '../../platform/query/resource.js'
import type { RawListQuery } from '../../platform/query/parse-query.js'
import { listResource } from '../../platform/query/run-query.js'
import type { FileStorage } from '../../platform/storage/file-storage.js'

export const DATA_EXPORT_JOB = 'users:data_export'
export const DATA_EXPORT_SWEEP_JOB = 'users:data_export_sweep'
/** Hourly: archives older than their 7 days are deleted. */
export const DATA_EXPORT_SWEEP_CRON = `17 * * * * ${DATA_EXPORT_SWEEP_JOB}`
/** How long an archive is kept, and how long a download link works (once). */
export const EXPORT_KEEP_DAYS = 7
export const LINK_MINUTES = 10
/** Rows per read of the streamed files (notifications, audit): memory stays flat whatever the count. */
const PAGE = 1000

const area = (tenantId: number) => `data-exports/${tenantId}`
const sha256 = (value: string) => createHash('sha256').update(value).digest()

export interface DataExportJobPayload {
  tenantId: number
  exportId: number
}

export interface PresentedDataExport {
  id: number
  user_id: number
  status: 'pending' | 'ready' | 'failed' | 'expired'
  size: number | null
  created_at: string
  ready_at: string | null
  expires_at: string | null
}

const README = `Your personal data, as stored by the workplace platform (GDPR Art. 15 and 20).

profile.json             your account: names, contact data, address, dates, settings (never the password)
memberships.json         your role and the departments you belong to
notifications.json       every notification addressed to you, read or unread
preferences.json         your notification preferences (push / email per kind)
sessions.json            your signed-in devices: device name, address, browser, times (never a token)
push-subscriptions.json  the browsers that receive push messages for you (endpoint addresses only)
audit.json               audit-log entries of changes you made and of changes about you
content.json             what you wrote: posts, comments, form messages, manual entries, calendar
                         entries, tasks, files you uploaded (their descriptions)
files/                   your profile picture and the files you uploaded

All times are UTC (ISO 8601). The archive is deleted ${EXPORT_KEEP_DAYS} days after it was made.
`

/** Times as every answer of the API has them (`YYYY-MM-DD HH:MM:SS`, UTC: the driver's text of a timestamp). */
function present(row: {
  id: number
  user_id: number
  status: PresentedDataExport['status']
  size: number | string | null
  created_at: string
  ready_at: string | null
  expires_at: string | null
}): PresentedDataExport {
  return {
    id: Number(row.id),
    user_id: Number(row.user_id),
    status: row.status,
    size: row.size === null ? null : Number(row.size),
    created_at: row.created_at,
    ready_at: row.ready_at,
    expires_at: row.expires_at,
  }
}

/**
 * A JSON array of one query's rows, read through a cursor PAGE rows at a time: flat memory, and one
 * statement in the order of an index (keyset pages on a uuid each sorted the person's whole inbox).
 */
function jsonArrayStream(db: Db, query: CompiledQuery<Record<string, unknown>>) {
  async function* generate() {
    yield '[\n'
    let first = true
    for await (const rows of streamCompiled(db, query, PAGE))
      for (const row of rows) {
        yield `${first ? '' : ',\n'}${JSON.stringify(row)}`
        first = false
      }
    yield '\n]\n'
  }
  return Readable.from(generate())
}

const json = (value: unknown) => Buffer.from(`${JSON.stringify(value, null, 2)}\n`, 'utf8')

/** Tables of content a person writes (`user_id` = the author), as content.json names them. */
const CONTENT_TABLES = [
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

/** The list of data exports (`GET /api/data-exports`), newest first, with the query conventions. */
export const dataExportResource = defineResource({
  name: 'data export',
  alias: 'e',
  uniqueKey: 'id',
  defaultSort: ['-id'],
  fields: {
    id: { type: 'id' },
    user_id: { type: 'id' },
    requested_by: { type: 'id' },
    status: { type: 'string' },
    size: { type: 'integer' },
    created_at: { type: 'timestamp' },
    ready_at: { type: 'timestamp' },
    expires_at: { type: 'timestamp' },
  },
})

export function createDataExports(deps: AppDeps, storage: FileStorage) {
  const { db } = deps

  const findRow = (database: Db, tenantId: number, id: number) =>
    database
      .selectFrom('data_exports')
      .select(['id', 'user_id', 'requested_by', 'status', 'size', 'file_name', 'created_at', 'ready_at', 'expires_at'])
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .executeTakeFirst()

  /** Asks for an archive of `userId`'s data: self, or another user with `users.export`. */
  async function request(actor: Actor, userId: number): Promise<PresentedDataExport> {
    if (userId !== actor.userId && !can(actor, 'users.export'))
      throw forbidden("Exporting another user's data needs the users.export permission")
    return db.transaction().execute(async (trx) => {
      const user = await trx
        .selectFrom('users')
        .select(['id', 'blacked_out_at'])
        .where('tenant_id', '=', actor.tenantId)
        .where('id', '=', userId)
        .executeTakeFirst()
      if (!user || user.blacked_out_at !== null) throw notFound('User')
      const row = await trx
        .insertInto('data_exports')
        .values({ tenant_id: actor.tenantId, user_id: userId, requested_by: actor.userId ?? null })
        .returning(['id', 'user_id', 'status', 'size', 'created_at', 'ready_at', 'expires_at'])
        .executeTakeFirstOrThrow()
      const payload: DataExportJobPayload = { tenantId: actor.tenantId, exportId: Number(row.id) }
      await enqueue(trx, DATA_EXPORT_JOB, payload, { key: `${DATA_EXPORT_JOB}:${row.id}`, maxAttempts: 3 })
      return present(row)
    })
  }

  /** An export the actor may see: their own, one they asked for, or any with `users.export`; else 404 (no oracle). */
  async function visible(actor: Actor, id: number) {
    const row = await findRow(db, actor.tenantId, id)
    const own = row && (Number(row.user_id) === actor.userId || Number(row.requested_by) === actor.userId)
    if (!row || (!own && !can(actor, 'users.export'))) throw notFound('Data export')
    return row
  }

  /** Every export of the tenant with `users.export`; else those of the actor and those they asked for. */
  async function list(actor: Actor, raw: RawListQuery) {
    let base = db.selectFrom('data_exports as e').where('e.tenant_id', '=', actor.tenantId)
    if (!can(actor, 'users.export')) {
      const self = actor.userId ?? -1
      base = base.where((eb) => eb.or([eb('e.user_id', '=', self), eb('e.requested_by', '=', self)]))
    }
    return listResource({ db, tenantId: actor.tenantId, actor }, dataExportResource, base, raw)
  }

  async function show(actor: Actor, id: number): Promise<PresentedDataExport> {
    return present(await visible(actor, id))
  }

  /** A download link for a ready archive: works once, for LINK_MINUTES minutes; a new link replaces the last one. */
  async function link(actor: Actor, id: number): Promise<{ url: string; expires_at: string }> {
    const row = await visible(actor, id)
    if (row.status !== 'ready') throw new AppError(409, 'not_ready', `The data export is ${row.status}, not ready`)
    const token = `${actor.tenantId}.${id}.${randomBytes(32).toString('base64url')}`
    const updated = await db
      .updateTable('data_exports')
      .set({
        link_hash: sha256(token),
        link_expires_at: sql<string>`now() + make_interval(mins => ${LINK_MINUTES})`,
      })
      .where('tenant_id', '=', actor.tenantId)
      .where('id', '=', id)
      .where('status', '=', 'ready')
      .returning('link_expires_at')
      .executeTakeFirst()
    if (!updated?.link_expires_at) throw new AppError(409, 'not_ready', 'The data export is not ready')
    return {
      url: `${deps.config.baseUrl}/api/data-exports/download/${token}`,
      expires_at: updated.link_expires_at,
    }
  }

  /** The archive behind a link's token, consuming the token; 404 for an unknown, used or expired one. */
  async function download(token: string) {
    const [tenant, id] = token.split('.', 2).map(Number)
    if (!Number.isSafeInteger(tenant) || !Number.isSafeInteger(id)) throw notFound('Download')
    const row = await db
      .updateTable('data_exports')
      .set({ link_hash: null, link_expires_at: null })
      .where('tenant_id', '=', tenant!)
      .where('id', '=', id!)
      .where('status', '=', 'ready')
      .where('link_hash', '=', sha256(token))
      .where('link_expires_at', '>', sql<string>`now()`)
      .returning(['file_name', 'user_id'])
      .executeTakeFirst()
    const file = row?.file_name ? await storage.open(area(tenant!), row.file_name) : undefined
    if (!row || !file) throw notFound('Download')
    return { ...file, fileName: `personal-data-${Number(row.user_id)}.zip` }
  }

  /** The job: writes the ZIP (streamed), marks the export ready and notifies the person. */
  async function build({ tenantId, exportId }: DataExportJobPayload): Promise<void> {
    const row = await findRow(db, tenantId, exportId)
    if (!row || row.status !== 'pending') return
    const userId = Number(row.user_id)
    try {
      const zip = new yazl.ZipFile()
      // an entry that cannot be read fails the export (status failed), never the process
      const zipFailed = new Promise<never>((_resolve, reject) => zip.on('error', reject))
      const saving = storage.save(area(tenantId), Readable.from(zip.outputStream), 'zip')
      await addEntries(zip, tenantId, userId)
      zip.end()
      const stored = await Promise.race([saving, zipFailed])
      await db.transaction().execute(async (trx) => {
        await trx
          .updateTable('data_exports')
          .set({
            status: 'ready',
            file_name: stored.name,
            size: stored.size,
            ready_at: sql<string>`now()`,
            expires_at: sql<string>`now() + make_interval(days => ${EXPORT_KEEP_DAYS})`,
          })
          .where('tenant_id', '=', tenantId)
          .where('id', '=', exportId)
          .execute()
        await enqueueNotifications(trx, {
          tenantId,
          type: 'dataExportReady',
          targetableType: 'dataExport',
          targetableId: exportId,
          sourceKey: `dataExport:${exportId}:ready`,
          data: {
            title: 'Your data export is ready',
            body: `Download it from your settings within ${EXPORT_KEEP_DAYS} days.`,
            url: `/settings?data-export=${exportId}`,
          },
          recipients: { userIds: [userId] },
        })
      })
    } catch (error) {
      await db
        .updateTable('data_exports')
        .set({ status: 'failed', error: String(error instanceof Error ? error.message : error).slice(0, 500) })
        .where('tenant_id', '=', tenantId)
        .where('id', '=', exportId)
        .execute()
      throw error
    }
  }

  async function addEntries(zip: yazl.ZipFile, tenantId: number, userId: number) {
    const user = await db
      .selectFrom('users')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('id', '=', userId)
      .executeTakeFirstOrThrow()
    const { password_hash: _secret, ...profile } = user
    zip.addBuffer(Buffer.from(README, 'utf8'), 'README.txt')
    zip.addBuffer(json(profile), 'profile.json')

    const role = await db
      .selectFrom('roles')
      .select(['id', 'name'])
      .where('tenant_id', '=', tenantId)
      .where('id', '=', user.role_id)
      .executeTakeFirst()
    const departments = await db
      .selectFrom('department_users as du')
      .innerJoin('departments as d', (j) =>
        j.onRef('d.tenant_id', '=', 'du.tenant_id').onRef('d.id', '=', 'du.department_id'),
      )
      .select(['d.id', 'd.name'])
      .where('du.tenant_id', '=', tenantId)
      .where('du.user_id', '=', userId)
      .orderBy('d.id')
      .execute()
    zip.addBuffer(json({ role: role ?? null, departments }), 'memberships.json')

    zip.addReadStream(
      jsonArrayStream(
        db,
        // newest first, in the order of the inbox's index
        sql<Record<string, unknown>>`
          select id, type, targetable_type, targetable_id, data, seen_at, read_at, created_at
          from notifications
          where tenant_id = ${tenantId} and notifiable_id = ${userId} and notifiable_type = 'user'
          order by created_at desc nulls last, id desc nulls last`.compile(db),
      ),
      'notifications.json',
    )

    const preferences = await db
      .selectFrom('notification_preferences as p')
      .innerJoin('notification_settings as s', (j) =>
        j.onRef('s.tenant_id', '=', 'p.tenant_id').onRef('s.id', '=', 'p.notification_setting_id'),
      )
      .select(['s.key', 'p.push', 'p.email'])
      .where('p.tenant_id', '=', tenantId)
      .where('p.user_id', '=', userId)
      .orderBy('s.key')
      .execute()
    zip.addBuffer(
      json({ wants_email_notifications: user.wants_email_notifications, email_digest: user.email_digest, preferences }),
      'preferences.json',
    )

    const sessions = await db
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
    zip.addBuffer(json(sessions), 'sessions.json')

    const subscriptions = await db
      .selectFrom('push_subscriptions')
      .select(['id', 'endpoint', 'user_agent', 'created_at'])
      .where('tenant_id', '=', tenantId)
      .where('user_id', '=', userId)
      .orderBy('id')
      .execute()
    zip.addBuffer(json(subscriptions), 'push-subscriptions.json')

    zip.addReadStream(
      jsonArrayStream(
        db,
        sql<Record<string, unknown>>`
          select id, created_at, action, target_type, target_id, changes, actor_id, ip, user_agent
          from audit_log
          where tenant_id = ${tenantId}
            and (actor_id = ${userId} or (target_type = 'user' and target_id = ${String(userId)}))
          order by id`.compile(db),
      ),
      'audit.json',
    )

    const content: Record<string, unknown[]> = {}
    for (const table of CONTENT_TABLES) {
      const { rows } = await sql<Record<string, unknown>>`
        select * from ${sql.table(table)} where tenant_id = ${tenantId} and user_id = ${userId} order by id`.execute(db)
      content[table] = rows.map(
        ({ tenant_id: _tenant, storage_name: _name, poster_storage_name: _poster, ...rest }) => rest,
      )
    }
    zip.addBuffer(json(content), 'content.json')

    // a file whose bytes are gone from the storage directory is named in files/MISSING.txt, not a failed export
    const missing: string[] = []
    const addStored = async (full: string, name: string) => {
      if (
        await fs.stat(full).then(
          (stat) => stat.isFile(),
          () => false,
        )
      )
        zip.addFile(full, name)
      else missing.push(name)
    }
    if (user.profile_picture)
      await addStored(
        storage.path(`profile-pictures/${tenantId}`, user.profile_picture),
        `files/profile-picture/${user.profile_picture}`,
      )
    const { rows: files } = await sql<{ id: string; name: string; storage_name: string }>`
      select id, name, storage_name from filemanager_files
      where tenant_id = ${tenantId} and user_id = ${userId} order by id`.execute(db)
    for (const file of files) {
      const safe = file.name.replace(/[^\p{L}\p{N}._ -]/gu, '_').slice(0, 120) || 'file'
      await addStored(storage.path(`filemanager/${tenantId}`, file.storage_name), `files/uploads/${file.id}-${safe}`)
    }
    if (missing.length > 0)
      zip.addBuffer(
        Buffer.from(`Files on record whose contents were not found in storage:\n${missing.join('\n')}\n`, 'utf8'),
        'files/MISSING.txt',
      )
  }

  /** Deletes the archives past their 7 days (bounded batches, any tenant); returns how many. */
  async function sweep(batch = 500): Promise<number> {
    let total = 0
    for (;;) {
      const expired = await db
        .selectFrom('data_exports')
        .select(['tenant_id', 'id', 'file_name'])
        .where('status', '=', 'ready')
        .where('expires_at', '<', sql<string>`now()`)
        .limit(batch)
        .execute()
      if (expired.length === 0) return total
      for (const row of expired) {
        if (row.file_name) await storage.remove(area(row.tenant_id), row.file_name)
        await db
          .updateTable('data_exports')
          .set({ status: 'expired', file_name: null, link_hash: null, link_expires_at: null })
          .where('tenant_id', '=', row.tenant_id)
          .where('id', '=', row.id)
          .execute()
      }
      total += expired.length
    }
  }

  /** The erasure's part: the person's export rows go in the transaction; the files after it (returned). */
  async function eraseFor(trx: Db, tenantId: number, userId: number): Promise<string[]> {
    const rows = await trx
      .deleteFrom('data_exports')
      .where('tenant_id', '=', tenantId)
      .where('user_id', '=', userId)
      .returning('file_name')
      .execute()
    return rows.flatMap((r) => (r.file_name ? [r.file_name] : []))
  }
  const removeFiles = async (tenantId: number, names: string[]) => {
    for (const name of names) await storage.remove(area(tenantId), name)
  }

  return { request, list, show, link, download, build, sweep, eraseFor, removeFiles }
}

export type DataExports = ReturnType<typeof createDataExports>
