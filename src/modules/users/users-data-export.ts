import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs/promises'
import { Readable } from 'node:stream'
import type { CompiledQuery } from 'kysely'
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
import * as queries from './users-data-export.queries.js'
import { departmentsOfUsers, findStoredUser } from './users.queries.js'

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

  const findRow = queries.findDataExport

  /** Asks for an archive of `userId`'s data: self, or another user with `users.export`. */
  async function request(actor: Actor, userId: number): Promise<PresentedDataExport> {
    if (userId !== actor.userId && !can(actor, 'users.export'))
      throw forbidden("Exporting another user's data needs the users.export permission")
    return db.transaction().execute(async (trx) => {
      const user = await queries.findExportedUser(trx, actor.tenantId, userId)
      if (!user || user.blacked_out_at !== null) throw notFound('User')
      const row = await queries.insertDataExport(trx, actor.tenantId, userId, actor.userId ?? null)
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
    const base = queries.selectDataExports(
      db,
      actor.tenantId,
      can(actor, 'users.export') ? undefined : (actor.userId ?? -1),
    )
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
    const updated = await queries.setDownloadLink(db, actor.tenantId, id, sha256(token), LINK_MINUTES)
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
    const row = await queries.consumeDownloadLink(db, tenant!, id!, sha256(token))
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
        await queries.markExportReady(trx, tenantId, exportId, stored, EXPORT_KEEP_DAYS)
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
      const message = String(error instanceof Error ? error.message : error).slice(0, 500)
      await queries.markExportFailed(db, tenantId, exportId, message)
      throw error
    }
  }

  async function addEntries(zip: yazl.ZipFile, tenantId: number, userId: number) {
    const user = await findStoredUser(db, tenantId, userId)
    // as executeTakeFirstOrThrow failed the export before (its message is the stored error)
    if (!user) throw new Error('no result')
    const { password_hash: _secret, ...profile } = user
    zip.addBuffer(Buffer.from(README, 'utf8'), 'README.txt')
    zip.addBuffer(json(profile), 'profile.json')

    const role = await queries.findRoleName(db, tenantId, user.role_id)
    const departments = (await departmentsOfUsers(db, tenantId, [userId])).map(({ user_id: _, ...d }) => d)
    zip.addBuffer(json({ role: role ?? null, departments }), 'memberships.json')

    zip.addReadStream(jsonArrayStream(db, queries.notificationsOfQuery(db, tenantId, userId)), 'notifications.json')

    const preferences = await queries.notificationPreferencesOf(db, tenantId, userId)
    zip.addBuffer(
      json({ wants_email_notifications: user.wants_email_notifications, email_digest: user.email_digest, preferences }),
      'preferences.json',
    )

    const sessions = await queries.sessionsOf(db, tenantId, userId)
    zip.addBuffer(json(sessions), 'sessions.json')

    const subscriptions = await queries.pushSubscriptionsOf(db, tenantId, userId)
    zip.addBuffer(json(subscriptions), 'push-subscriptions.json')

    zip.addReadStream(jsonArrayStream(db, queries.auditOfQuery(db, tenantId, userId)), 'audit.json')

    const content: Record<string, unknown[]> = {}
    for (const table of queries.CONTENT_TABLES) {
      const rows = await queries.contentRowsOf(db, table, tenantId, userId)
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
    const files = await queries.uploadedFilesOf(db, tenantId, userId)
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
      const expired = await queries.selectExpiredExports(db, batch)
      if (expired.length === 0) return total
      for (const row of expired) {
        if (row.file_name) await storage.remove(area(row.tenant_id), row.file_name)
        await queries.markExportExpired(db, row.tenant_id, row.id)
      }
      total += expired.length
    }
  }

  /** The erasure's part: the person's export rows go in the transaction; the files after it (returned). */
  async function eraseFor(trx: Db, tenantId: number, userId: number): Promise<string[]> {
    const rows = await queries.deleteExportsOf(trx, tenantId, userId)
    return rows.flatMap((r) => (r.file_name ? [r.file_name] : []))
  }
  const removeFiles = async (tenantId: number, names: string[]) => {
    for (const name of names) await storage.remove(area(tenantId), name)
  }

  return { request, list, show, link, download, build, sweep, eraseFor, removeFiles }
}

export type DataExports = ReturnType<typeof createDataExports>
