import { sql } from 'kysely'
import type { Db } from '../../../platform/db/schema.js'

/** A new record to deliver, with its recipient's email settings and whether they have a device to push to. */
export interface DeliveryRow {
  id: string
  type: string
  created_at: string
  notifiable_id: number
  data: { title?: string; body?: string; url?: string }
  email: string | null
  wants_email_notifications: boolean
  email_digest: 'immediate' | 'daily' | 'weekly'
  /** Whether the user has a device to push to. */
  has_push: boolean
}

/** The records of one source key for these users (active, non-deleted ones), with what delivery needs of them. */
export async function selectDeliveryRows(
  db: Db,
  tenantId: number,
  sourceKey: string,
  userIds: number[],
): Promise<DeliveryRow[]> {
  return (await db
    .selectFrom('notifications as n')
    .innerJoin('users as u', (j) => j.onRef('u.tenant_id', '=', 'n.tenant_id').onRef('u.id', '=', 'n.notifiable_id'))
    .select([
      'n.id',
      'n.type',
      'n.created_at',
      'n.notifiable_id',
      'n.data',
      'u.email',
      'u.wants_email_notifications',
      'u.email_digest',
    ])
    .select(
      sql<boolean>`exists (select 1 from push_subscriptions ps where ps.tenant_id = ${tenantId} and ps.user_id = n.notifiable_id)`.as(
        'has_push',
      ),
    )
    .where('n.tenant_id', '=', tenantId)
    .where('n.source_key', '=', sourceKey)
    .where('n.notifiable_id', 'in', userIds)
    .where('u.deleted_at', 'is', null)
    .where('u.active', '=', true)
    .execute()) as DeliveryRow[]
}

/** The records among `notificationIds` already emailed (a retry skips them). */
export async function selectEmailedNotificationIds(db: Db, tenantId: number, notificationIds: string[]) {
  const rows = await db
    .selectFrom('outbound_messages')
    .select('notification_id')
    .where('tenant_id', '=', tenantId)
    .where('channel', '=', 'email')
    .where('notification_id', 'in', notificationIds)
    .execute()
  return rows.map((r) => r.notification_id)
}

export interface SentEmail {
  status: 'stored' | 'sent'
  userId: number
  notificationId: string
  recipient: string
  subject: string
  html: string
  text: string
}

/** Records a record's email as sent (once per record). */
export async function insertNotificationEmail(db: Db, tenantId: number, email: SentEmail): Promise<void> {
  await db
    .insertInto('outbound_messages')
    .values({
      tenant_id: tenantId,
      channel: 'email',
      status: email.status,
      user_id: email.userId,
      notification_id: email.notificationId,
      recipient: email.recipient,
      subject: email.subject,
      body_html: email.html,
      body_text: email.text,
    })
    .onConflict((oc) => oc.columns(['tenant_id', 'channel', 'notification_id']).doNothing())
    .execute()
}
