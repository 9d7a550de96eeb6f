import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { Logger } from 'pino'
import { Type, type Static } from 'typebox'
import type { AppDeps } from '../../platform/app-module.js'
import { recordAudit } from '../../platform/audit/audit-log.js'
import { currentRequestContext } from '../../platform/audit/request-context.js'
import { hashPassword } from '../../platform/auth/passwords.js'
import { revokeUserTokens } from '../../platform/auth/tokens.js'
import type { Db } from '../../platform/db/schema.js'
import { AppError, invalid } from '../../platform/http/errors.js'
import { errorResponses } from '../../platform/http/schemas.js'
import { enqueue } from '../../platform/jobs/jobs.js'
import type { Mailer } from '../notifications/index.js'
import { consumeTicket, findTicket, issueTicket, useTicket } from './tickets.js'
import { escapeHtml } from '../../platform/text/escape-html.js'
import { signInEligibleUser } from './sign-in.js'

export const PASSWORD_RESET_JOB = 'identity:password_reset'
/** A reset link works once, for this long. */
export const RESET_TTL_SECONDS = 30 * 60
/** Per tenant and client address: this many reset requests in the window, then 429. */
const REQUESTS_PER_ADDRESS = 10
/** Per account: at most this many reset emails in the window (more requests send nothing). */
const EMAILS_PER_ACCOUNT = 3
const WINDOW_SECONDS = 15 * 60

export const PasswordResetBodySchema = Type.Object(
  {
    tenant: Type.String({ minLength: 1, maxLength: 63 }),
    login: Type.String({ minLength: 1, maxLength: 255, description: 'username or email address' }),
  },
  { additionalProperties: false },
)
type PasswordResetBody = Static<typeof PasswordResetBodySchema>
export const PasswordResetAcceptedSchema = Type.Object({
  status: Type.Literal('accepted'),
  message: Type.String(),
})
export const PasswordResetConfirmBodySchema = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 100 }),
    password: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'min length: tenant setting `password_min_length` (default 8)',
    }),
  },
  { additionalProperties: false },
)
type PasswordResetConfirmBody = Static<typeof PasswordResetConfirmBodySchema>

export interface PasswordResetPayload {
  tenantId: number
  login: string
}

const ACCEPTED = {
  status: 'accepted' as const,
  message: 'If the account exists and has an email address, a reset link is on its way',
}

export function createPasswordResetService({ db }: AppDeps) {
  /**
   * Always the same answer, and the same statements whether or not the account exists: the lookup,
   * the token and the email happen in a job (`identity:password_reset`).
   */
  async function request(body: PasswordResetBody) {
    const tenant = await db
      .selectFrom('tenants')
      .select('id')
      .where('slug', '=', body.tenant.toLowerCase())
      .executeTakeFirst()
    if (!tenant) return ACCEPTED
    const ip = currentRequestContext().ip ?? 'unknown'
    // counted under a lock on tenant+address (one for the whole fleet): a burst cannot pass the limit
    const retry = await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`reset:${tenant.id}/${ip}`}, 0))`.execute(trx)
      const recent = await trx
        .selectFrom('password_reset_requests')
        .select([
          sql<number>`count(*)::int`.as('requests'),
          sql<number>`ceil(extract(epoch from min(created_at) + make_interval(secs => ${WINDOW_SECONDS}) - now()))::int`.as(
            'retry',
          ),
        ])
        .where('tenant_id', '=', tenant.id)
        .where('ip', '=', ip)
        .where(sql<boolean>`created_at > now() - make_interval(secs => ${WINDOW_SECONDS})`)
        .executeTakeFirstOrThrow()
      if (recent.requests >= REQUESTS_PER_ADDRESS) return Math.max(1, recent.retry)
      await trx.insertInto('password_reset_requests').values({ tenant_id: tenant.id, ip }).execute()
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
    const tenant = await db
      .selectFrom('tenants')
      .select('settings')
      .where('id', '=', tenantId)
      .executeTakeFirstOrThrow()
    const minLength = tenant.settings?.password_min_length ?? 8
    if (body.password.length < minLength) throw invalid({ password: [`must be at least ${minLength} characters`] })
    if (!(await signInEligibleUser(db, tenantId, userId))) throw badToken()
    const passwordHash = await hashPassword(body.password)
    await db.transaction().execute(async (trx) => {
      if (!(await useTicket(trx, tenantId, ticket.id))) throw badToken()
      await trx
        .updateTable('users')
        .set({ password_hash: passwordHash, password_change_required: false, updated_at: sql<string>`now()` })
        .where('tenant_id', '=', tenantId)
        .where('id', '=', userId)
        .execute()
      await revokeUserTokens(trx, tenantId, userId)
      // other reset links of the user end too
      await trx
        .updateTable('auth_tickets')
        .set({ used_at: sql<string>`now()` })
        .where('tenant_id', '=', tenantId)
        .where('user_id', '=', userId)
        .where('kind', '=', 'password_reset')
        .where('used_at', 'is', null)
        .execute()
      await recordAudit(trx, { tenantId, action: 'auth.password_reset', targetType: 'user', targetId: userId })
    })
  }

  return { request, confirm }
}
export type PasswordResetService = ReturnType<typeof createPasswordResetService>

/** The job: finds the account, issues the link (stored hashed) and emails it; nothing for an unknown account. */
export function passwordResetJob(deps: { db: Db; appUrl: string; mailer: Mailer; log: Logger }) {
  return async (payload: PasswordResetPayload): Promise<void> => {
    const { db } = deps
    const user = await db
      .selectFrom('users')
      .select(['id', 'email', 'first_name', 'username'])
      .where('tenant_id', '=', payload.tenantId)
      .where((eb) =>
        eb.or([
          eb(sql<string>`lower(username)`, '=', payload.login),
          eb(sql<string>`lower(email)`, '=', payload.login),
        ]),
      )
      .where('active', '=', true)
      .where('deleted_at', 'is', null)
      .where('blacked_out_at', 'is', null)
      .where('email', 'is not', null)
      .orderBy('id')
      .limit(1)
      .executeTakeFirst()
    if (!user?.email) return
    const recent = await db
      .selectFrom('auth_tickets')
      .select(sql<number>`count(*)::int`.as('sent'))
      .where('tenant_id', '=', payload.tenantId)
      .where('user_id', '=', user.id)
      .where('kind', '=', 'password_reset')
      .where(sql<boolean>`created_at > now() - make_interval(secs => ${WINDOW_SECONDS})`)
      .executeTakeFirstOrThrow()
    if (recent.sent >= EMAILS_PER_ACCOUNT) {
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
    await recordAudit(db, {
      tenantId: payload.tenantId,
      action: 'auth.password_reset_requested',
      targetType: 'user',
      targetId: user.id,
    })
  }
}

export async function passwordResetRoutes(
  app: FastifyInstance,
  { resets }: { resets: PasswordResetService },
): Promise<void> {
  const tags = ['auth']
  app.post<{ Body: PasswordResetBody }>(
    '/api/auth/password-reset',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Ask for a password reset link by email (always 202, whether or not the account exists)',
        security: [],
        body: PasswordResetBodySchema,
        response: { 202: PasswordResetAcceptedSchema, ...errorResponses },
      },
    },
    async (request, reply) => reply.code(202).send(await resets.request(request.body)),
  )

  app.post<{ Body: PasswordResetConfirmBody }>(
    '/api/auth/password-reset/confirm',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Set a new password with the token of a reset link; ends every session of the user',
        security: [],
        body: PasswordResetConfirmBodySchema,
        response: { 204: Type.Null(), ...errorResponses },
      },
    },
    async (request, reply) => {
      await resets.confirm(request.body)
      return reply.code(204).send()
    },
  )
}
