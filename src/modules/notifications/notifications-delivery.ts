import type { Logger } from 'pino'
import type { Db } from '../../platform/db/schema.js'
import type { DeliverPayload } from './notifications-fan-out.js'
import { absoluteNotificationUrl, escapeHtml, notificationBodyText, sanitizeNotificationBody } from './notification-html.js'
import type { Mailer } from './notifications-mailer.js'
import type { PushSender } from './notifications-push.js'

export interface DeliveryDeps {
  db: Db
  mailer: Mailer
  push: PushSender
  appUrl: string
  log: Logger
}

interface DeliveryRow {
  id: string
  notifiable_id: number
  data: { title?: string; body?: string; url?: string }
  email: string | null
  wants_email_notifications: boolean
}

function emailFor(row: DeliveryRow, appUrl: string) {
  const title = row.data.title ?? ''
  const body = sanitizeNotificationBody(row.data.body ?? '')
  const link = absoluteNotificationUrl(row.data.url ?? '/', appUrl)
  return {
    subject: title,
    html: `${body}\n<p><a href="${escapeHtml(link)}">${escapeHtml(link)}</a></p>`,
    text: `${notificationBodyText(body)}\n\n${link}`.trim(),
  }
}

/**
 * Delivers a batch of new records by push and (for users who want it) email. Idempotent: each
 * message is recorded in `outbound_messages`, and a retry skips what was recorded. A failed email
 * fails the job after the rest of the batch went out, so the queue retries it with backoff; the
 * in-app records were committed by the fan-out and are never touched here.
 */
export async function deliverNotifications(deps: DeliveryDeps, payload: DeliverPayload): Promise<void> {
  const { db, tenantId } = { db: deps.db, tenantId: payload.tenantId }
  if (payload.userIds.length === 0) return
  const rows = (await db.selectFrom('notifications as n')
    .innerJoin('users as u', (j) => j.onRef('u.tenant_id', '=', 'n.tenant_id').onRef('u.id', '=', 'n.notifiable_id'))
    .select(['n.id', 'n.notifiable_id', 'n.data', 'u.email', 'u.wants_email_notifications'])
    .where('n.tenant_id', '=', tenantId)
    .where('n.source_key', '=', payload.sourceKey)
    .where('n.notifiable_id', 'in', payload.userIds)
    .where('u.deleted_at', 'is', null)
    .where('u.active', '=', true)
    .execute()) as DeliveryRow[]
  if (rows.length === 0) return

  await deps.push.send(db, rows.map((r) => ({
    tenantId, userId: r.notifiable_id, notificationId: r.id,
    title: r.data.title ?? '', body: notificationBodyText(r.data.body ?? ''), url: absoluteNotificationUrl(r.data.url ?? '/', deps.appUrl),
  })))

  const wantEmail = rows.filter((r) => r.wants_email_notifications && r.email)
  if (wantEmail.length === 0) return
  const done = new Set((await db.selectFrom('outbound_messages').select('notification_id')
    .where('tenant_id', '=', tenantId).where('channel', '=', 'email')
    .where('notification_id', 'in', wantEmail.map((r) => r.id)).execute()).map((r) => r.notification_id))

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
    await db.insertInto('outbound_messages').values({
      tenant_id: tenantId, channel: 'email', status: deps.mailer.transport === 'smtp' ? 'sent' : 'stored',
      user_id: row.notifiable_id, notification_id: row.id, recipient: message.to, subject: message.subject,
      body_html: message.html, body_text: message.text,
    }).onConflict((oc) => oc.columns(['tenant_id', 'channel', 'notification_id']).doNothing()).execute()
  }
  if (failures.length > 0) throw new AggregateError(failures, `${failures.length} of ${wantEmail.length} emails failed`)
}
