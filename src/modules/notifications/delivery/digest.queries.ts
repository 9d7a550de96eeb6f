import { type NotNull, sql } from 'kysely'
import type { Db } from '../../../platform/db/schema.js'
import { categorySql } from '../preferences/categories.queries.js'

/**
 * Every tenant's users due a digest of these kinds: active, non-deleted, non-blacked-out, with an email
 * and email notifications on. A maintenance job's named cross-tenant statement.
 */
export function selectDigestUsers<Kind extends 'daily' | 'weekly'>(db: Db, kinds: Kind[]) {
  return (
    db
      .selectFrom('users')
      .select(['tenant_id', 'id', 'email', 'email_digest'])
      .where('email_digest', 'in', kinds)
      .where('wants_email_notifications', '=', true)
      .where('email', 'is not', null)
      .where('deleted_at', 'is', null)
      .where('blacked_out_at', 'is', null)
      .where('active', '=', true)
      // the filters above: an email, and one of these digest kinds
      .$narrowType<{ email: NotNull; email_digest: Kind }>()
      .execute()
  )
}

/** Claims the user's digest of `period` (primary key user + period): undefined when it was claimed before. */
export function claimDigest(db: Db, tenantId: number, userId: number, period: string, now: Date) {
  return db
    .insertInto('email_digests')
    .values({ tenant_id: tenantId, user_id: userId, period, covered_until: now, notification_count: 0 })
    .onConflict((oc) => oc.doNothing())
    .returning('period')
    .executeTakeFirst()
}

/** Until when the user's digests of other periods covered their records. */
export function findDigestCoveredUntil(db: Db, tenantId: number, userId: number, period: string) {
  return db
    .selectFrom('email_digests')
    .select(sql<string>`max(covered_until)`.as('until'))
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('period', '<>', period)
    .executeTakeFirst()
}

/**
 * The user's unread records created in (since, now], minus the categories muted for email, oldest first:
 * the first `limit`, each with the `total` count (filtered, counted and capped by the database).
 */
export function selectDigestItems(
  db: Db,
  tenantId: number,
  userId: number,
  since: Date | string,
  now: Date,
  limit: number,
) {
  const muted = db
    .selectFrom('notification_preferences as p')
    .innerJoin('notification_settings as s', (j) =>
      j.onRef('s.tenant_id', '=', 'p.tenant_id').onRef('s.id', '=', 'p.notification_setting_id'),
    )
    .select('s.key')
    .where('p.tenant_id', '=', tenantId)
    .where('p.user_id', '=', userId)
    .where('p.email', '=', false)
  return (
    db
      .selectFrom('notifications as n')
      .select(['n.id', 'n.type', 'n.data', 'n.created_at', sql<number>`count(*) over ()`.as('total')])
      .where('n.tenant_id', '=', tenantId)
      .where('n.notifiable_id', '=', userId)
      .where('n.read_at', 'is', null)
      // bound as Date parameters, as before; Kysely types a comparison's value with the column's select type (string)
      .where('n.created_at', '>', sql<string>`${since}`)
      .where('n.created_at', '<=', sql<string>`${now}`)
      .where(categorySql('n.type'), 'not in', muted)
      .orderBy('n.created_at')
      .orderBy('n.id')
      .limit(limit)
      .execute()
  )
}

/** Gives a claimed period back (its send failed), so a retry can send it. */
export async function deleteDigestClaim(db: Db, tenantId: number, userId: number, period: string): Promise<void> {
  await db
    .deleteFrom('email_digests')
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('period', '=', period)
    .execute()
}

export async function markDigestSent(
  db: Db,
  tenantId: number,
  userId: number,
  period: string,
  notificationCount: number,
): Promise<void> {
  await db
    .updateTable('email_digests')
    .set({ sent_at: sql<Date>`now()`, notification_count: notificationCount })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('period', '=', period)
    .execute()
}

export interface DigestEmail {
  status: 'stored' | 'sent'
  recipient: string
  subject: string
  html: string
  text: string
  period: string
}

/** Records a sent digest email. */
export async function insertDigestEmail(db: Db, tenantId: number, userId: number, email: DigestEmail): Promise<void> {
  await db
    .insertInto('outbound_messages')
    .values({
      tenant_id: tenantId,
      channel: 'email',
      status: email.status,
      user_id: userId,
      recipient: email.recipient,
      subject: email.subject,
      body_html: email.html,
      body_text: email.text,
      payload: JSON.stringify({ digest: email.period }),
    })
    .execute()
}
