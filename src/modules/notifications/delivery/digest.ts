import type { Logger } from 'pino'
import type { Db } from '../../../platform/db/schema.js'
import { absoluteNotificationUrl, notificationBodyText } from '../sending/body-html.js'
import * as queries from './digest.queries.js'
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
  const users = await queries.selectDigestUsers(deps.db, kinds)
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
  const claimed = await queries.claimDigest(db, user.tenant_id, user.id, period, now)
  if (!claimed) return false
  const previous = await queries.findDigestCoveredUntil(db, user.tenant_id, user.id, period)
  const since = previous?.until ?? new Date(now.getTime() - (user.email_digest === 'daily' ? 1 : 7) * DAY_MS)
  // the user's unread records of the period, minus the categories muted for email: filtered, counted and
  // capped by the database (a digest reader may have thousands unread)
  const due = await queries.selectDigestItems(db, user.tenant_id, user.id, since, now, DIGEST_ITEMS)
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
    await queries.deleteDigestClaim(db, user.tenant_id, user.id, period)
    throw error
  }
  await db.transaction().execute(async (trx) => {
    await queries.markDigestSent(trx, user.tenant_id, user.id, period, total)
    await queries.insertDigestEmail(trx, user.tenant_id, user.id, {
      status: deps.mailer.transport === 'smtp' ? 'sent' : 'stored',
      recipient: user.email,
      subject: email.subject,
      html: email.html,
      text: email.text,
      period,
    })
  })
  return true
}
