import type { Logger } from 'pino'
import type { AppDeps } from '../../platform/app-module.js'
import type { Db } from '../../platform/db/schema.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import type { JobHandlers } from '../../platform/jobs/jobs.js'
import { escapeHtml } from '../../platform/text/escape-html.js'
import { createMailer, type Mailer } from '../notifications/index.js'
import { deleteOldLoginFailures } from './login.queries.js'
import * as resetQueries from './password-reset.queries.js'
import type { PasswordResetPayload } from './password-reset.schemas.js'
import {
  EMAILS_PER_ACCOUNT,
  PASSWORD_RESET_JOB,
  RESET_TTL_SECONDS,
  RESET_WINDOW_SECONDS,
} from './password-reset.service.js'
import { deleteEndedSessionActivity } from './sessions.queries.js'
import { countRecentUserTickets, deleteExpiredTickets } from './tickets.queries.js'
import { consumeTicket, issueTicket } from './tickets.service.js'

export const IDENTITY_CRON = ['17 3 * * * auth:prune_login_failures', '23 3 * * * identity:prune']

const isResetPayload = (payload: unknown): payload is PasswordResetPayload =>
  typeof payload === 'object' &&
  payload !== null &&
  'tenantId' in payload &&
  typeof payload.tenantId === 'number' &&
  'login' in payload &&
  typeof payload.login === 'string'

/** The job: finds the account, issues the link (stored hashed) and emails it; nothing for an unknown account. */
export function passwordResetJob(deps: { db: Db; appUrl: string; mailer: Mailer; log: Logger }) {
  return async (payload: PasswordResetPayload): Promise<void> => {
    const { db } = deps
    const user = await resetQueries.findResettableUser(db, payload.tenantId, payload.login)
    if (!user?.email) return
    const sent = await countRecentUserTickets(db, payload.tenantId, user.id, 'password_reset', RESET_WINDOW_SECONDS)
    if (sent >= EMAILS_PER_ACCOUNT) {
      deps.log.info({ tenantId: payload.tenantId, userId: user.id }, 'password reset throttled for this account')
      return
    }
    if (deps.mailer.transport !== 'smtp') {
      deps.log.warn(
        { tenantId: payload.tenantId, userId: user.id },
        'password reset email not sent: SMTP_URL is not set',
      )
      return
    }
    const token = await issueTicket(db, {
      tenantId: payload.tenantId,
      kind: 'password_reset',
      userId: user.id,
      ttlSeconds: RESET_TTL_SECONDS,
    })
    const link = `${deps.appUrl}/reset-password?token=${encodeURIComponent(token)}`
    const name = user.first_name || user.username
    try {
      await deps.mailer.send({
        to: user.email,
        subject: 'Reset your password',
        text: `Hello ${name},\n\nopen this link within 30 minutes to choose a new password:\n\n${link}\n\nIf you did not ask for this, ignore this email: your password stays as it is.`,
        html: `<p>Hello ${escapeHtml(name)},</p><p>open this link within 30 minutes to choose a new password:</p><p><a href="${escapeHtml(link)}">${escapeHtml(link)}</a></p><p>If you did not ask for this, ignore this email: your password stays as it is.</p>`,
      })
    } catch (error) {
      // the link never reached anyone: it is void, and the job retries with a new one
      await consumeTicket(db, 'password_reset', token)
      throw error
    }
    await recordDomainEvent(db, {
      type: 'auth.passwordResetRequested',
      tenantId: payload.tenantId,
      actorId: null,
      subjectType: 'user',
      subjectId: user.id,
    })
  }
}

/** Every job of signing in: the reset email, and the daily prunes of what sign-in flows leave behind. */
export function identityJobs({ db, config, log }: AppDeps): JobHandlers {
  const mailer = createMailer({ smtpUrl: config.smtpUrl, appUrl: config.appUrl, log })
  const reset = passwordResetJob({ db, appUrl: config.appUrl, mailer, log })
  return {
    // keeps the brute-force table small: failures older than a day no longer matter
    'auth:prune_login_failures': async () => {
      await deleteOldLoginFailures(db)
    },
    [PASSWORD_RESET_JOB]: async (payload) => {
      if (!isResetPayload(payload)) throw new Error(`${PASSWORD_RESET_JOB}: malformed payload`)
      await reset(payload)
    },
    // used and expired tickets, old reset requests, activity rows of ended tokens
    'identity:prune': async () => {
      await deleteExpiredTickets(db)
      await resetQueries.deleteOldResetRequests(db)
      await deleteEndedSessionActivity(db)
    },
  }
}
