import type { Logger } from 'pino'
import type { Db } from '../../../platform/db/schema.js'
import type { DeliverPayload } from '../sending/fan-out.js'
import { absoluteNotificationUrl, notificationBodyText, sanitizeNotificationBody } from '../sending/body-html.js'
import { mutedChannels } from '../preferences/preferences.js'
import * as queries from './delivery.queries.js'
import type { DeliveryRow } from './delivery.queries.js'
import { immediateEmail } from './email-templates.js'
import type { Mailer } from './mailer.js'
import type { PushMessage, PushSender } from '../push/web-push.js'

export interface DeliveryDeps {
  db: Db
  mailer: Mailer
  push: PushSender
  appUrl: string
  log: Logger
}

/** The push payload's body: plain text, at most 1,000 characters. */
const PUSH_BODY_CHARS = 1000

function emailFor(row: DeliveryRow, appUrl: string) {
  const bodyHtml = sanitizeNotificationBody(row.data.body ?? '')
  return immediateEmail({
    title: row.data.title ?? '',
    bodyHtml,
    bodyText: notificationBodyText(bodyHtml),
    link: absoluteNotificationUrl(row.data.url ?? '/', appUrl),
  })
}

/** A record as its user's devices receive it. */
export function pushMessageOf(
  tenantId: number,
  row: Pick<DeliveryRow, 'id' | 'type' | 'created_at' | 'notifiable_id'> & { data: Record<string, unknown> },
  appUrl: string,
): PushMessage {
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined)
  return {
    tenantId,
    userId: row.notifiable_id,
    notificationId: row.id,
    type: row.type,
    createdAt: row.created_at,
    title: text(row.data.title) ?? '',
    body: notificationBodyText(text(row.data.body) ?? '').slice(0, PUSH_BODY_CHARS),
    url: absoluteNotificationUrl(text(row.data.url) ?? '/', appUrl),
  }
}

/**
 * Delivers a batch of new records by push (every device of each user) and (for users who want it
 * immediately) email, skipping the channels a user muted for the records' category. Idempotent: push
 * attempts are recorded in `push_deliveries`, emails in `outbound_messages`, and a retry skips both. A failed email
 * fails the job after the rest of the batch went out, so the queue retries it with backoff; the
 * in-app records were committed by the fan-out and are never touched here.
 */
export async function deliverNotifications(deps: DeliveryDeps, payload: DeliverPayload): Promise<void> {
  const { db, tenantId } = { db: deps.db, tenantId: payload.tenantId }
  if (payload.userIds.length === 0) return
  const rows = await queries.selectDeliveryRows(db, tenantId, payload.sourceKey, payload.userIds)
  // digest readers get this one in their next digest instead
  const emailNow = (r: DeliveryRow) =>
    r.wants_email_notifications && r.email !== null && r.email !== '' && r.email_digest === 'immediate'
  // recipients with neither a device nor an immediate email cost no further statement
  const reachable = rows.filter((r) => r.has_push || emailNow(r))
  if (reachable.length === 0) return

  // one source key, one type: the category's preferences are read once for the batch
  const muted = await mutedChannels(
    db,
    tenantId,
    reachable[0].type,
    reachable.map((r) => r.notifiable_id),
  )
  await deps.push.send(
    db,
    reachable
      .filter((r) => r.has_push && !muted.push.has(r.notifiable_id))
      .map((r) => pushMessageOf(tenantId, r, deps.appUrl)),
  )

  const wantEmail = reachable.filter((r) => emailNow(r) && !muted.email.has(r.notifiable_id))
  if (wantEmail.length === 0) return
  const done = new Set(
    await queries.selectEmailedNotificationIds(
      db,
      tenantId,
      wantEmail.map((r) => r.id),
    ),
  )

  const failures: unknown[] = []
  for (const row of wantEmail) {
    if (done.has(row.id)) continue
    const message = { to: row.email!, ...emailFor(row, deps.appUrl) }
    try {
      await deps.mailer.send(message)
    } catch (error) {
      deps.log.warn({ err: error, notificationId: row.id }, 'email delivery failed; the job will retry')
      failures.push(error)
      continue
    }
    await queries.insertNotificationEmail(db, tenantId, {
      status: deps.mailer.transport === 'smtp' ? 'sent' : 'stored',
      userId: row.notifiable_id,
      notificationId: row.id,
      recipient: message.to,
      subject: message.subject,
      html: message.html,
      text: message.text,
    })
  }
  if (failures.length > 0) throw new AggregateError(failures, `${failures.length} of ${wantEmail.length} emails failed`)
}
