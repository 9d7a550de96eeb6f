import type { AppDeps } from '../../platform/app-module.js'
import { currentRequestContext } from '../../platform/audit/request-context.js'
import { hashPassword } from '../../platform/auth/passwords.js'
import { revokeUserTokens } from '../../platform/auth/tokens.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { AppError, invalid } from '../../platform/http/errors.js'
import { enqueue } from '../../platform/jobs/jobs.js'
import * as queries from './password-reset.queries.js'
import type {
  PasswordResetAccepted,
  PasswordResetBody,
  PasswordResetConfirmBody,
  PasswordResetPayload,
} from './password-reset.schemas.js'
import { findTenantBySlug, findTenantSettings } from './sign-in.queries.js'
import { signInEligibleUser } from './sign-in.service.js'
import { findTicket, useTicket } from './tickets.service.js'
import { useUpAllTickets } from './tickets.queries.js'

export const PASSWORD_RESET_JOB = 'identity:password_reset'
/** A reset link works once, for this long. */
export const RESET_TTL_SECONDS = 30 * 60
/** Per tenant and client address: this many reset requests in the window, then 429. */
const REQUESTS_PER_ADDRESS = 10
/** Per account: at most this many reset emails in the window (more requests send nothing). */
export const EMAILS_PER_ACCOUNT = 3
export const RESET_WINDOW_SECONDS = 15 * 60

const ACCEPTED: PasswordResetAccepted = {
  status: 'accepted',
  message: 'If the account exists and has an email address, a reset link is on its way',
}

export type PasswordResetService = ReturnType<typeof createPasswordResetService>

export function createPasswordResetService({ db }: AppDeps) {
  /**
   * Always the same answer, and the same statements whether or not the account exists: the lookup,
   * the token and the email happen in a job (`identity:password_reset`).
   */
  async function request(body: PasswordResetBody): Promise<PasswordResetAccepted> {
    const tenant = await findTenantBySlug(db, body.tenant.toLowerCase())
    if (!tenant) return ACCEPTED
    const ip = currentRequestContext().ip ?? 'unknown'
    // counted under a lock on tenant+address (one for the whole fleet): a burst cannot pass the limit
    const retry = await db.transaction().execute(async (trx) => {
      await queries.lockResetRequests(trx, tenant.id, ip)
      const recent = await queries.countRecentResetRequests(trx, tenant.id, ip, RESET_WINDOW_SECONDS)
      if (recent.requests >= REQUESTS_PER_ADDRESS) return Math.max(1, recent.retry)
      await queries.insertResetRequest(trx, tenant.id, ip)
      const payload: PasswordResetPayload = { tenantId: tenant.id, login: body.login.toLowerCase() }
      await enqueue(trx, PASSWORD_RESET_JOB, payload, { maxAttempts: 5 })
      return 0
    })
    if (retry > 0)
      throw new AppError(429, 'too_many_attempts', 'Too many password reset requests; try again later', undefined, {
        'Retry-After': String(retry),
      })
    return ACCEPTED
  }

  /** Sets the new password (tenant rules), uses the token up, revokes every token of the user. */
  async function confirm(body: PasswordResetConfirmBody): Promise<void> {
    const badToken = () =>
      invalid(
        { token: ['is invalid, used or expired'] },
        'The reset link is invalid, used or expired',
        'invalid_reset_token',
      )
    const ticket = await findTicket(db, 'password_reset', body.token)
    if (!ticket || ticket.userId === null) throw badToken()
    const { tenantId, userId } = ticket
    const tenant = await findTenantSettings(db, tenantId)
    const minLength = tenant.settings?.password_min_length ?? 8
    if (body.password.length < minLength) throw invalid({ password: [`must be at least ${minLength} characters`] })
    if (!(await signInEligibleUser(db, tenantId, userId))) throw badToken()
    const passwordHash = await hashPassword(body.password)
    await db.transaction().execute(async (trx) => {
      if (!(await useTicket(trx, tenantId, ticket.id))) throw badToken()
      await queries.updatePassword(trx, tenantId, userId, passwordHash)
      await revokeUserTokens(trx, tenantId, userId)
      // other reset links of the user end too
      await useUpAllTickets(trx, tenantId, userId, 'password_reset')
      await recordDomainEvent(trx, {
        type: 'auth.passwordReset',
        tenantId,
        actorId: null,
        subjectType: 'user',
        subjectId: userId,
      })
    })
  }

  return { request, confirm }
}
