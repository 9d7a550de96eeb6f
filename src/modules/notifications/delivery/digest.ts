import { type NotNull, sql } from 'kysely'
import type { Logger } from 'pino'
import type { Db } from '../../../platform/db/schema.js'
import { absoluteNotificationUrl, notificationBodyText } from '../sending/body-html.js'
import { categorySql } from '../preferences/categories.queries.js'
import { digestEmail } from './email-templates.js'
import type { Mailer } from './mailer.js'

/** Items listed in one digest; the rest are counted ("and N more"). */
export const DIGEST_ITEMS = 20
const DAY_MS = 24 * 60 * 60 * 1000

export interface DigestDeps {
  db: Db
  mailer: Mailer
  appUrl: string
  log: Logger
  digestHour: number
}

/** The period a digest covers: one per day, or one per ISO week (sent on Mondays). */
function periodOf(kind: 'daily' | 'weekly', now: Date): string {
  if (kind === 'daily') return `day:${now.toISOString().slice(0, 10)}`
  const thursday = new Date(
    Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 3 - ((now.getUTCDay() + 6) % 7)),
  )
  const week =
    1 +
    Math.floor(
      (thursday.getTime() - Date.UTC(thursday.getUTCFullYear(), 0, 4)) / (7 * DAY_MS) +
        ((new Date(Date.UTC(thursday.getUTCFullYear(), 0, 4)).getUTCDay() + 6) % 7) / 7,
    )
  return `week:${thursday.getUTCFullYear()}-W${String(week).padStart(2, '0')}`
}

/**
 * The digests due at `now` (graphile-worker runs this hourly; it acts at DIGEST_HOUR UTC, weekly ones on
 * Mondays). Each user's period is claimed first (a row in `email_digests`, primary key user + period), so
 * retries and parallel workers never send two digests for one period; a failed send gives the claim back.
 * A maintenance job: it reads every tenant's digest users (named cross-tenant statement).
 */
export async function sendDueDigests(deps: DigestDeps, now = new Date(), { force = false } = {}): Promise<number> {
  if (!force && now.getUTCHours() !== deps.digestHour) return 0
  const kinds: Array<'daily' | 'weekly'> = now.getUTCDay() === 1 || force ? ['daily', 'weekly'] : ['daily']
  const users = await deps.db
    .selectFrom('users')
    .select(['tenant_id', 'id', 'email', 'email_digest'])
    .where('email_digest', 'in', kinds)
    .where('wants_email_notifications', '=', true)
    .where('email', 'is not', null)
    .where('deleted_at', 'is', null)
    .where('blacked_out_at', 'is', null)
    .where('active', '=', true)
    // the filters above: an email, and one of these digest kinds
    .$narrowType<{ email: NotNull; email_digest: (typeof kinds)[number] }>()
    .execute()
  let sent = 0
  for (const user of users) {
    if (await sendDigest(deps, user, now)) sent++
  }
  return sent
}

async function sendDigest(
  deps: DigestDeps,
  user: { tenant_id: number; id: number; email: string; email_digest: 'daily' | 'weekly' },
  now: Date,
): Promise<boolean> {
  const { db } = deps
  const period = periodOf(user.email_digest, now)
  const claimed = await db
    .insertInto('email_digests')
    .values({ tenant_id: user.tenant_id, user_id: user.id, period, covered_until: now, notification_count: 0 })
    .onConflict((oc) => oc.doNothing())
    .returning('period')
    .executeTakeFirst()
  if (!claimed) return false
  const previous = await db
    .selectFrom('email_digests')
    .select(sql<string>`max(covered_until)`.as('until'))
    .where('tenant_id', '=', user.tenant_id)
    .where('user_id', '=', user.id)
    .where('period', '<>', period)
    .executeTakeFirst()
  const since = previous?.until ?? new Date(now.getTime() - (user.email_digest === 'daily' ? 1 : 7) * DAY_MS)
  // the user's unread records of the period, minus the categories muted for email: filtered, counted and
  // capped by the database (a digest reader may have thousands unread)
  const muted = db
    .selectFrom('notification_preferences as p')
    .innerJoin('notification_settings as s', (j) =>
      j.onRef('s.tenant_id', '=', 'p.tenant_id').onRef('s.id', '=', 'p.notification_setting_id'),
    )
    .select('s.key')
    .where('p.tenant_id', '=', user.tenant_id)
    .where('p.user_id', '=', user.id)
    .where('p.email', '=', false)
  const due = await db
    .selectFrom('notifications as n')
    .select(['n.id', 'n.type', 'n.data', 'n.created_at', sql<number>`count(*) over ()`.as('total')])
    .where('n.tenant_id', '=', user.tenant_id)
    .where('n.notifiable_id', '=', user.id)
    .where('n.read_at', 'is', null)
    // bound as Date parameters, as before; Kysely types a comparison's value with the column's select type (string)
    .where('n.created_at', '>', sql<string>`${since}`)
    .where('n.created_at', '<=', sql<string>`${now}`)
    .where(categorySql('n.type'), 'not in', muted)
    .orderBy('n.created_at')
    .orderBy('n.id')
    .limit(DIGEST_ITEMS)
    .execute()
  if (due.length === 0) return false // the claim stays: nothing to say for this period
  const total = Number(due[0].total)
  const data = (r: (typeof due)[number]) => r.data as { title?: string; body?: string; url?: string }
  const email = digestEmail({
    heading: `${total} unread notification${total === 1 ? '' : 's'}`,
    items: due.map((r) => ({
      title: data(r).title ?? '',
      bodyText: notificationBodyText(data(r).body ?? '').slice(0, 200),
      link: absoluteNotificationUrl(data(r).url ?? '/', deps.appUrl),
      createdAt: r.created_at,
    })),
    more: Math.max(0, total - DIGEST_ITEMS),
    allLink: absoluteNotificationUrl('/notifications', deps.appUrl),
  })
  try {
    await deps.mailer.send({ to: user.email, ...email })
  } catch (error) {
    // give the period back, so the job's retry can send it
    await db
      .deleteFrom('email_digests')
      .where('tenant_id', '=', user.tenant_id)
      .where('user_id', '=', user.id)
      .where('period', '=', period)
      .execute()
    throw error
  }
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('email_digests')
      .set({ sent_at: sql<Date>`now()`, notification_count: total })
      .where('tenant_id', '=', user.tenant_id)
      .where('user_id', '=', user.id)
      .where('period', '=', period)
      .execute()
    await trx
      .insertInto('outbound_messages')
      .values({
        tenant_id: user.tenant_id,
        channel: 'email',
        status: deps.mailer.transport === 'smtp' ? 'sent' : 'stored',
        user_id: user.id,
        recipient: user.email,
        subject: email.subject,
        body_html: email.html,
        body_text: email.text,
        payload: JSON.stringify({ digest: period }),
      })
      .execute()
  })
  return true
}
