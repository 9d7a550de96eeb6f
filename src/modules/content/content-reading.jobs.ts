import { composedTable } from '../../platform/composition.js'
import type { Db } from '../../platform/db/schema.js'
import { jobOf, type JobHandlers } from '../../platform/jobs/jobs.js'
import type { Reading } from './content-reading.js'

// The publish and remind jobs of content that must be read (docs/content-reading.md), and the
// `contentReadings` field of `AppModule` by which they find the reading of a record's alias.

/** The job that publishes a scheduled record when its time comes. */
export const PUBLISH_JOB = 'content:publish'
export interface PublishPayload {
  alias: string
  tenantId: number
  id: number
}

/** The job that reminds the pending readers of a record at its `confirmation_due_at`. */
export const REMIND_JOB = 'content:remind'
/** `due`: the due time the job was scheduled for (a record whose due time changed since has a newer job). */
export interface RemindPayload extends PublishPayload {
  due: string
}

/** The key of a record's one pending publish or remind job (a new schedule replaces the old one's run time). */
export const readingJobKey = (job: typeof PUBLISH_JOB | typeof REMIND_JOB, alias: string, id: number): string =>
  `${job}:${alias}:${id}`

declare module '../../platform/app-module.js' {
  interface AppModule {
    /** The content kinds with publishing and reading confirmations this module owns, by alias (publish job). */
    contentReadings?: Record<string, Reading>
  }
}

const readings = composedTable(
  (modules) => new Map(modules.flatMap((module) => Object.entries(module.contentReadings ?? {}))),
)

/**
 * The publish job's handler: publishes the record if it is due and not yet published (one
 * conditional update decides, so a job run twice, or by two workers, publishes once). A record
 * rescheduled later is not due yet: its replaced job runs at the new time.
 */
export function publishJobHandlers(db: Db): JobHandlers {
  return {
    [PUBLISH_JOB]: jobOf<PublishPayload>(async (payload) => {
      await runPublishJob(db, payload)
    }),
    [REMIND_JOB]: jobOf<RemindPayload>(async (payload) => {
      await runRemindJob(db, payload)
    }),
  }
}

/** One run of the reminder job; the number of people reminded, or null when nothing was due. */
export async function runRemindJob(db: Db, payload: RemindPayload): Promise<number | null> {
  const reading = readings().get(payload.alias)
  if (!reading) throw new Error(`no reading content "${payload.alias}"`)
  return db.transaction().execute((trx) => reading.remindIfDue(trx, payload))
}

/** One run of the publish job; true when this run published the record. */
export async function runPublishJob(db: Db, payload: PublishPayload): Promise<boolean> {
  const reading = readings().get(payload.alias)
  if (!reading) throw new Error(`no reading content "${payload.alias}"`)
  return db.transaction().execute((trx) => reading.publishIfDue(trx, payload.tenantId, payload.id, null))
}
