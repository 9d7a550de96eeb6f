import { Type } from 'typebox'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { Db } from '../../platform/db/schema.js'
import { withWorkMem } from '../../platform/db/work-mem.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { AppError, forbidden, notFound } from '../../platform/http/errors.js'
import { enqueue } from '../../platform/jobs/jobs.js'
import type { QueryContext } from '../../platform/query/resource.js'
import { ownStateChange, recordSyncWrites, type SyncWrites, withSyncWrites } from '../../platform/sync/change-log.js'
import type { ContentChange, ContentResource, ContentRow } from './content-declaration.js'
import * as reachQueries from './content-reach.queries.js'
import type { Reach } from './content-reach.resource.js'
import {
  PUBLISH_JOB,
  type PublishPayload,
  readingJobKey,
  REMIND_JOB,
  type RemindPayload,
} from './content-reading.jobs.js'
import * as queries from './content-reading.queries.js'

/**
 * Content that must be read (issue 41, docs/content-reading.md), for any content table with the
 * columns of migration 0160 (`published_at`, `published_notified_at`, `pinned`, `comments_enabled`,
 * `requires_reading_confirmation`, `confirmation_due_at`, `reminded_at`): publishing exactly once,
 * the reader's own state, the reach of a record and reminders of those still pending.
 */

/** Memory of each hash of the reach counts: the candidates of a 100,000-user tenant are hashed, not sorted on disk. */
const REPORT_WORK_MEM_MB = 64

/** What each reading module decides itself: its notifications (a module, not the platform, sends them). */
export interface ReadingNotices {
  /** The record was published (now or by its schedule), or updated with `notify: true`. */
  published(trx: Db, tenantId: number, row: ContentRow, eventId: string, kind: 'published' | 'updated'): Promise<void>
  /** A reminder went out to the users recorded under `reminderId`. */
  reminded(trx: Db, tenantId: number, row: ContentRow, reminderId: number): Promise<void>
}

export interface ReadingDeclaration {
  /** The content alias (`infoboardPost`), the stored `target_type` of reads and reminders. */
  alias: string
  table: string
  module: string
  /** Domain event of publishing (`infoboard.post.published`), which automations may send to webhooks. */
  publishedEvent: string
  /** Whether an edit of a published record notifies always (manual entries, contract 30) or only with `notify: true` (posts). */
  editsNotify?: 'always' | 'when_asked'
}

/** The written body fields of a reading content (create and update), as TypeBox schemas. */
export const readingBodyFields = (timestampInput: ReturnType<typeof Type.String>) => ({
  published_at: Type.Union([timestampInput, Type.Null()], {
    description: 'absent: published now; null: a draft; a future time: scheduled (published and notified then)',
  }),
  pinned: Type.Boolean({ description: 'pinned posts come first in lists' }),
  comments_enabled: Type.Boolean(),
  requires_reading_confirmation: Type.Boolean(),
  confirmation_due_at: Type.Union([timestampInput, Type.Null()]),
})

/** The reading service of one content resource. */
export function defineReading(decl: ReadingDeclaration, content: ContentResource, notices: ReadingNotices) {
  /**
   * Publishes the record if it is due and was never published: ONE conditional update claims it
   * (`published_notified_at` from null), so however many workers or requests race, exactly one
   * records the event and queues the notifications, in its transaction.
   */
  async function publishIfDue(trx: Db, tenantId: number, id: number, actorId: number | null): Promise<boolean> {
    const row = await queries.claimPublication(trx, decl.table, tenantId, id)
    if (!row) return false
    const eventId = await recordDomainEvent(trx, {
      type: decl.publishedEvent,
      tenantId,
      actorId,
      subjectType: decl.alias,
      subjectId: id,
      data: { id, title: row.title, published_at: row.published_at, url: content.appUrl('', row) },
    })
    await notices.published(trx, tenantId, row, eventId, 'published')
    return true
  }

  /** After a create or update (in its transaction): publish now, schedule the job, or notify an edit when asked. */
  async function afterWrite(trx: Db, change: ContentChange): Promise<void> {
    const { row, actor } = change
    if (change.kind === 'deleted') {
      // what was read and reminded goes with the record (its reminder recipients cascade)
      await queries.deleteReadsAndReminders(trx, actor.tenantId, decl.alias, row.id)
      return
    }
    await scheduleReminder(trx, change)
    if (row.published_notified_at === null) {
      if (await publishIfDue(trx, actor.tenantId, row.id, actor.userId)) return
      if (typeof row.published_at === 'string') {
        const payload: PublishPayload = { alias: decl.alias, tenantId: actor.tenantId, id: row.id }
        // one pending job per record: a new schedule replaces the old one's run time (job key)
        await enqueue(trx, PUBLISH_JOB, payload, {
          key: readingJobKey(PUBLISH_JOB, decl.alias, row.id),
          runAt: new Date(`${row.published_at.replace(' ', 'T')}Z`),
          maxAttempts: 10,
        })
      }
      return
    }
    const asked = decl.editsNotify === 'always' || change.values.notify === true
    if (change.kind === 'updated' && asked) await notices.published(trx, actor.tenantId, row, change.eventId, 'updated')
  }

  /**
   * The automatic reminder at `confirmation_due_at` (issue 41): one pending job per record (job key),
   * moved when the due time changes, removed when the record no longer asks for a confirmation or
   * has no due time. A due time already past when written schedules nothing.
   */
  async function scheduleReminder(trx: Db, change: ContentChange): Promise<void> {
    const { row, actor } = change
    const touched = ['requires_reading_confirmation', 'confirmation_due_at'].some((k) => k in change.values)
    if (change.kind !== 'created' && !touched) return
    const key = readingJobKey(REMIND_JOB, decl.alias, row.id)
    const due =
      typeof row.confirmation_due_at === 'string' ? new Date(`${row.confirmation_due_at.replace(' ', 'T')}Z`) : null
    if (row.requires_reading_confirmation === true && due !== null && due.getTime() > Date.now()) {
      const payload: RemindPayload = { alias: decl.alias, tenantId: actor.tenantId, id: row.id, due: due.toISOString() }
      await enqueue(trx, REMIND_JOB, payload, { key, runAt: due, maxAttempts: 10 })
    } else if (change.kind === 'updated') await queries.removeJob(trx, key)
  }

  /**
   * The reminder job's run: reminds the pending readers if the record still asks for a confirmation by
   * that due time and is published; a manual reminder within the last 24 hours counts as this one.
   */
  async function remindIfDue(trx: Db, payload: RemindPayload): Promise<number | null> {
    const row = await content.findStored(trx, payload.tenantId, payload.id)
    if (!row || row.requires_reading_confirmation !== true || row.published_notified_at === null) return null
    const due =
      typeof row.confirmation_due_at === 'string' ? new Date(`${row.confirmation_due_at.replace(' ', 'T')}Z`) : null
    if (due?.toISOString() !== payload.due) return null
    const sent = await remindPending(trx, payload.tenantId, row, null)
    return 'reminder' in sent ? sent.reminder.recipients : null
  }

  /** The visible record or 404 (same answer for "missing" and "outside the audience"). */
  async function visible(db: Db, actor: Actor, id: number): Promise<ContentRow> {
    return (await visibleWithState(db, actor, id)).row
  }

  /** The record if the actor may view it (else 404), with the actor's own reading state, in one statement. */
  async function visibleWithState(db: Db, actor: Actor, id: number) {
    if (!can(actor, `${decl.module}.view`)) throw forbidden(`This requires the "${decl.module}.view" permission`)
    const found = await queries.findVisibleWithState(
      db,
      decl.table,
      decl.alias,
      actor.tenantId,
      actor.userId,
      id,
      (c) => content.visibleToActor(actor, c),
    )
    if (!found) throw notFound(content.label)
    return found
  }

  /** Records that the actor opened the record; `created` on the first time. */
  async function markSeen(db: Db, actor: Actor, id: number) {
    const { state: before } = await visibleWithState(db, actor, id)
    // the first time, the actor's `my_state` changes: its change record for the actor's offline clients
    // (issue 43) rides in the write's transaction; a repeat changes nothing and stays one statement
    const write = async (trx: Db, record: (writes: SyncWrites) => Promise<void>) => {
      const seen = await queries.upsertSeen(trx, actor.tenantId, decl.alias, id, actor.userId)
      if (seen.created) await record({ changes: [ownStateChange(decl.alias, id, actor.userId)] })
      return seen
    }
    const { created, ...state } =
      before.seen_at !== null
        ? await write(db, (writes) => recordSyncWrites(db, actor.tenantId, writes))
        : await withSyncWrites(db, actor.tenantId, write)
    return { created, state }
  }

  /** Confirms reading (records the time) and marks the user's notifications of the record read; `created` on the first time. */
  async function confirm(db: Db, actor: Actor, id: number) {
    const { row, state: before } = await visibleWithState(db, actor, id)
    if (row.requires_reading_confirmation !== true)
      throw new AppError(
        422,
        'confirmation_not_required',
        `This ${content.label.toLowerCase()} asks for no confirmation`,
      )
    // confirmed before: nothing to write (a confirmation is never taken back), one read answers the repeat
    if (before.confirmed_at !== null) return { created: false, state: before }
    // the confirmation, and the first time also the user's notifications of the record marked read, in
    // one transaction of two statements Citus routes whole (a write inside a CTE is not), with the marks'
    // change records for offline clients; the time is a value, not now() (upsertConfirmation says why)
    const at = new Date().toISOString()
    const { created, ...state } = await withSyncWrites(db, actor.tenantId, async (trx, record) => {
      const confirmed = await queries.upsertConfirmation(trx, actor.tenantId, decl.alias, id, actor.userId, at)
      if (confirmed.created) {
        const marked = await queries.markNotificationsOfRecordRead(trx, actor.tenantId, actor.userId, decl.alias, id)
        // the marks and the actor's new `my_state` reach the actor's offline clients (issue 43; the
        // notification entity is the notifications module's)
        await record({
          changes: [
            ...marked.map((row) => ({ entity: 'notification', id: row.id, userId: actor.userId })),
            ownStateChange(decl.alias, id, actor.userId),
          ],
        })
      }
      return confirmed
    })
    return { created, state }
  }

  /** SQL: the audience of record `id` (`audienceSql`: who may view it now, active, personal, not blacked out), as `aud(id)`. */
  const audienceSql = (tenantId: number, id: number) =>
    reachQueries.audienceSql(tenantId, content.viewedBySql(tenantId, id))

  /** The record for someone who may edit it: visible (else 404) and `<module>.manage` (else 403). */
  async function editable(db: Db, actor: Actor, id: number): Promise<ContentRow> {
    const row = await visible(db, actor, id)
    if (!can(actor, `${decl.module}.manage`)) throw forbidden(`This requires the "${decl.module}.manage" permission`)
    return row
  }

  /**
   * The counts of a record's reach, set-based, never holding the audience: the candidates are counted
   * per profile, the content rule is evaluated on one member of each profile, and the counts of the
   * profiles that may view are summed. Two statements side by side (each a pass over the tenant's
   * candidates, so the report takes the time of one): the totals, and the counts per department (a
   * user in two departments counts once in the totals and once in each department).
   */
  async function reach(db: Db, actor: Actor, id: number): Promise<Reach> {
    const row = await editable(db, actor, id)
    const t = actor.tenantId
    const requires = row.requires_reading_confirmation === true
    const detail = await queries.readReachDetail(db, t)
    const totals = withWorkMem(db, REPORT_WORK_MEM_MB, (trx) =>
      reachQueries.selectReachTotals(trx, decl.alias, t, id, requires, content.viewedBySql(t, id)),
    )
    const departments = withWorkMem(db, REPORT_WORK_MEM_MB, (trx) =>
      reachQueries.selectReachByDepartment(trx, decl.alias, t, id, requires, detail, content.viewedBySql(t, id)),
    )
    const [sum, byDepartment] = await Promise.all([totals, departments])
    return { ...sum, requires_reading_confirmation: requires, reach_detail: detail, by_department: byDepartment }
  }

  /**
   * The per-person list's base query and context (permission `<module>.reach`, tenant setting
   * `reach_detail = named`): the audience with their reads, role and departments.
   */
  async function reachUsers(db: Db, actor: Actor, id: number) {
    const row = await visible(db, actor, id)
    if (!can(actor, `${decl.module}.reach`)) throw forbidden(`This requires the "${decl.module}.reach" permission`)
    if ((await queries.readReachDetail(db, actor.tenantId)) === 'counts_only')
      throw forbidden('This tenant shows reading counts only (reach_detail: counts_only)', 'reach_counts_only')
    const t = actor.tenantId
    const base = reachQueries.selectReachUsers(db, decl.alias, t, id, audienceSql(t, id))
    const ctx: QueryContext = {
      db,
      tenantId: t,
      actor,
      flags: { requiresConfirmation: row.requires_reading_confirmation === true },
    }
    return { base, ctx }
  }

  /**
   * Reminds the users still pending (set-based: one insert records them, one fan-out notifies them),
   * at most once per record per 24 hours (429 otherwise, with `Retry-After`).
   */
  async function remind(db: Db, actor: Actor, id: number) {
    const row = await editable(db, actor, id)
    if (row.requires_reading_confirmation !== true)
      throw new AppError(
        422,
        'confirmation_not_required',
        `This ${content.label.toLowerCase()} asks for no confirmation`,
      )
    return db.transaction().execute(async (trx) => {
      const sent = await remindPending(trx, actor.tenantId, row, actor.userId)
      if ('reminder' in sent) return sent.reminder
      throw new AppError(429, 'reminder_too_soon', 'A reminder for this was sent within the last 24 hours', undefined, {
        'retry-after': String(sent.retryAfter),
      })
    })
  }

  /**
   * Claims the record's reminder (none within 24 hours: one conditional update decides) and records
   * and notifies the pending audience; `actorId` null for the automatic reminder at the due time.
   */
  async function remindPending(
    trx: Db,
    t: number,
    row: ContentRow,
    actorId: number | null,
  ): Promise<{ reminder: { id: number; recipients: number; created_at: string } } | { retryAfter: number }> {
    const id = row.id
    const claimed = await queries.claimReminder(trx, decl.table, t, id)
    if (!claimed.claimed) return { retryAfter: Math.max(1, claimed.retry_after ?? 1) }
    // three plain statements, not one with writing CTEs: each is routed whole to the tenant's shard on
    // Citus (the recipients' insert … select reads colocated tables and takes tenant_id from users)
    const created = await queries.insertReminder(trx, t, decl.alias, id, actorId)
    const audience = audienceSql(t, id)
    const recipients = await queries.insertPendingRecipients(trx, t, decl.alias, id, created.id, actorId, audience)
    const reminder = { ...created, recipients }
    await queries.updateReminderRecipients(trx, t, reminder.id, reminder.recipients)
    if (reminder.recipients > 0) await notices.reminded(trx, t, row, reminder.id)
    return { reminder }
  }

  return { publishIfDue, remindIfDue, afterWrite, markSeen, confirm, reach, reachUsers, remind, audienceSql }
}

export type Reading = ReturnType<typeof defineReading>
