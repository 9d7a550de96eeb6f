import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { Secret, TOTP } from 'otpauth'
import { Type, type Static } from 'typebox'
import type { Config } from '../../config.js'
import type { AppDeps } from '../../platform/app-module.js'
import { recordAudit } from '../../platform/audit/audit-log.js'
import type { Actor } from '../../platform/auth/actor.js'
import { hasUsablePassword, verifyPassword } from '../../platform/auth/passwords.js'
import { assertHoldsEvery } from '../../platform/auth/permissions.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import type { Db } from '../../platform/db/schema.js'
import { AppError, conflict, forbidden, invalid, notFound } from '../../platform/http/errors.js'
import { errorResponses, IdSchema } from '../../platform/http/schemas.js'
import { isSealed, secretBoxFor, type SecretBox, type SecretHolder } from '../../platform/secrets/secret-box.js'
import { completeSignIn, recordFailedSignIn, signInEligibleUser } from './sign-in.js'
import { findTicket, useTicket } from './tickets.js'

const PERIOD = 30
/** Codes of the step before and after the current one are accepted too (clock drift). */
const WINDOW = 1
export const MAX_FAILED_CODES = 5
export const LOCK_SECONDS = 15 * 60
const RECOVERY_CODES = 10

const CodeSchema = Type.String({ pattern: '^[0-9]{6}$', description: 'a 6-digit TOTP code' })
export const TotpEnrollmentSchema = Type.Object({
  secret: Type.String({ description: 'base32; shown once, for authenticator apps that cannot scan the URL' }),
  otpauth_url: Type.String({ description: '`otpauth://totp/…` (RFC 6238; SHA-1, 6 digits, 30 s): show as a QR code' }),
})
export const TotpEnrollBodySchema = Type.Object(
  {
    password: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description:
          'your current password (required unless the account has none: then a sign-in of the last ten minutes)',
      }),
    ),
  },
  { additionalProperties: false },
)
type TotpEnrollBody = Static<typeof TotpEnrollBodySchema>
/** An account without a password (single sign-on) enrolls within this long after signing in. */
const RECENT_SIGN_IN_SECONDS = 10 * 60
export const TotpCodeBodySchema = Type.Object({ code: CodeSchema }, { additionalProperties: false })
type TotpCodeBody = Static<typeof TotpCodeBodySchema>
export const TotpDisableBodySchema = Type.Object(
  {
    code: Type.Optional(CodeSchema),
    recovery_code: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
  },
  { additionalProperties: false, description: 'a current TOTP code or one of the recovery codes' },
)
type TotpDisableBody = Static<typeof TotpDisableBodySchema>
export const RecoveryCodesSchema = Type.Object({
  recovery_codes: Type.Array(Type.String(), { description: 'shown once; each works once instead of a TOTP code' }),
})
const UserParamsSchema = Type.Object({ id: IdSchema })
type UserParams = Static<typeof UserParamsSchema>

const normalizeRecoveryCode = (code: string) => code.replace(/[\s-]/g, '').toLowerCase()
const hashRecoveryCode = (code: string) => createHash('sha256').update(normalizeRecoveryCode(code)).digest('hex')
/** `xxxxx-xxxxx` in lower-case base32 (50 bits). */
function newRecoveryCode(): string {
  const text = new Secret({ size: 7 }).base32.toLowerCase().slice(0, 10)
  return `${text.slice(0, 5)}-${text.slice(5)}`
}

function totpOf(secretBase32: string, label = 'user', issuer = 'Workplace'): TOTP {
  return new TOTP({
    issuer,
    label,
    algorithm: 'SHA1',
    digits: 6,
    period: PERIOD,
    secret: Secret.fromBase32(secretBase32),
  })
}

/** The time step a valid code belongs to, or undefined. */
function stepOf(secretBase32: string, code: string, now = Date.now()): number | undefined {
  const delta = totpOf(secretBase32).validate({ token: code, timestamp: now, window: WINDOW })
  return delta === null ? undefined : Math.floor(now / 1000 / PERIOD) + delta
}

interface TotpRow {
  secret: string
  enabled_at: string | null
  last_step: number
  locked_until_seconds: number | null
  recovery_codes: string[]
}

async function loadTotp(db: Db, tenantId: number, userId: number): Promise<TotpRow | undefined> {
  return db
    .selectFrom('user_totp')
    .select([
      'secret',
      'enabled_at',
      'last_step',
      'recovery_codes',
      sql<
        number | null
      >`case when locked_until > now() then ceil(extract(epoch from locked_until - now()))::int end`.as(
        'locked_until_seconds',
      ),
    ])
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .executeTakeFirst()
}

const lockedError = (seconds: number) =>
  new AppError(429, 'mfa_locked', 'Too many wrong codes: the second factor is locked for now', undefined, {
    'Retry-After': String(Math.max(1, seconds)),
  })

/**
 * Counts an attempt against the factor's lock before anything is checked (issue 39), in one
 * statement (the row lock serializes concurrent attempts, on every node of a fleet): the attempt
 * that reaches MAX_FAILED_CODES locks the factor for LOCK_SECONDS; while locked no attempt is taken,
 * a correct one neither. A lock that has run out starts a new count. Throws 429 `mfa_locked`.
 */
async function reserveAttempt(db: Db, tenantId: number, userId: number): Promise<void> {
  // the times are values, not now() of the statement: Citus refuses a non-immutable function inside
  // the CASE of an UPDATE (docs/citus.md)
  const now = new Date()
  const at = now.toISOString()
  const lockEnd = new Date(now.getTime() + LOCK_SECONDS * 1000).toISOString()
  const lapsed = sql<boolean>`(locked_until is not null and locked_until <= ${at}::timestamptz)`
  const next = sql<number>`(case when ${lapsed} then 1 else failed_attempts + 1 end)`
  const reserved = await db
    .updateTable('user_totp')
    .set({
      failed_attempts: next,
      locked_until: sql<string>`case when ${next} >= ${MAX_FAILED_CODES}
        then ${lockEnd}::timestamptz when ${lapsed} then null else locked_until end`,
      updated_at: sql<string>`now()`,
    })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where(sql<boolean>`(locked_until is null or locked_until <= ${at}::timestamptz)`)
    .returning('failed_attempts')
    .executeTakeFirst()
  if (reserved) return
  const row = await loadTotp(db, tenantId, userId)
  throw lockedError(row?.locked_until_seconds ?? LOCK_SECONDS)
}

/** A correct code releases the count (and the lock its own attempt set). */
async function releaseAttempts(db: Db, tenantId: number, userId: number): Promise<void> {
  await db
    .updateTable('user_totp')
    .set({ failed_attempts: 0, locked_until: null, updated_at: sql<string>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .execute()
}

/**
 * Checks a TOTP code (accepted once: its step must be newer than the last accepted one) or a
 * recovery code (removed when used). The attempt is counted first (`reserveAttempt`); the fifth
 * wrong one locks the factor for 15 minutes.
 */
async function checkSecondFactor(
  db: Db,
  box: SecretBox,
  tenantId: number,
  userId: number,
  row: TotpRow,
  proof: { code?: string; recoveryCode?: string },
): Promise<boolean> {
  await reserveAttempt(db, tenantId, userId)
  let accepted = false
  if (proof.code !== undefined) {
    const step = stepOf(box.open(row.secret), proof.code)
    if (step !== undefined) {
      const updated = await db
        .updateTable('user_totp')
        .set({ last_step: step, updated_at: sql<string>`now()` })
        .where('tenant_id', '=', tenantId)
        .where('user_id', '=', userId)
        .where('last_step', '<', step)
        .executeTakeFirst()
      accepted = updated.numUpdatedRows > 0n
    }
  } else if (proof.recoveryCode !== undefined) {
    const hashed = hashRecoveryCode(proof.recoveryCode)
    const known = row.recovery_codes.some((stored) =>
      timingSafeEqual(Buffer.from(stored, 'hex'), Buffer.from(hashed, 'hex')),
    )
    if (known) {
      const updated = await db
        .updateTable('user_totp')
        .set({ recovery_codes: sql<string[]>`array_remove(recovery_codes, ${hashed})`, updated_at: sql<string>`now()` })
        .where('tenant_id', '=', tenantId)
        .where('user_id', '=', userId)
        .where(sql<boolean>`${hashed} = any(recovery_codes)`)
        .executeTakeFirst()
      accepted = updated.numUpdatedRows > 0n
    }
  }
  if (accepted) await releaseAttempts(db, tenantId, userId)
  return accepted
}

/**
 * A signed-in user proves their second factor again (linking an identity): nothing to prove without
 * TOTP on; otherwise a current code, counted against the lock. 422 `invalid_totp_code` naming `totp`.
 */
export async function proveSecondFactor(
  db: Db,
  config: Config,
  tenantId: number,
  userId: number,
  code: string | undefined,
): Promise<void> {
  const row = await loadTotp(db, tenantId, userId)
  if (!row?.enabled_at) return
  const ok =
    code !== undefined && (await checkSecondFactor(db, secretBoxFor(config.secrets), tenantId, userId, row, { code }))
  if (!ok)
    throw invalid({ totp: ['is missing, wrong or was already used'] }, 'The code is not valid', 'invalid_totp_code')
}

/** `POST /api/auth/login {mfa_token, totp | recovery_code}`: the second step of a password sign-in. */
export async function completeMfaSignIn(
  db: Db,
  config: Config,
  body: { mfa_token: string; totp?: string; recovery_code?: string },
) {
  const box = secretBoxFor(config.secrets)
  const invalidToken = () =>
    new AppError(401, 'invalid_mfa_token', 'The mfa_token is invalid, used or expired: sign in with the password again')
  if ((body.totp === undefined) === (body.recovery_code === undefined))
    throw invalid({ totp: ['send either totp or recovery_code'] })
  const ticket = await findTicket(db, 'mfa', body.mfa_token)
  if (!ticket || ticket.userId === null) throw invalidToken()
  const { tenantId, userId } = ticket
  const row = await loadTotp(db, tenantId, userId)
  if (!row || row.enabled_at === null) throw invalidToken()
  let ok: boolean
  try {
    ok = await checkSecondFactor(db, box, tenantId, userId, row, { code: body.totp, recoveryCode: body.recovery_code })
  } catch (error) {
    await recordFailedSignIn(db, tenantId, userId, { method: 'mfa', reason: 'locked' })
    throw error
  }
  if (!ok) {
    await recordFailedSignIn(db, tenantId, userId, {
      method: 'mfa',
      reason: body.totp !== undefined ? 'wrong_totp' : 'wrong_recovery_code',
    })
    throw new AppError(401, 'invalid_mfa_code', 'The code is wrong or was already used')
  }
  if (!(await useTicket(db, tenantId, ticket.id))) throw invalidToken()
  if (!(await signInEligibleUser(db, tenantId, userId))) throw invalidToken()
  const deviceName = typeof ticket.data.device_name === 'string' ? ticket.data.device_name : null
  return completeSignIn(db, config, { tenantId, userId, method: 'mfa', deviceName })
}

export function createTotpService({ db, config }: AppDeps) {
  const box = secretBoxFor(config.secrets)

  async function label(actor: Actor): Promise<{ label: string; issuer: string }> {
    const row = await db
      .selectFrom('users as u')
      .innerJoin('tenants as t', 't.id', 'u.tenant_id')
      .select(['u.username', 't.name'])
      .where('u.tenant_id', '=', actor.tenantId)
      .where('t.id', '=', actor.tenantId)
      .where('u.id', '=', actor.userId)
      .executeTakeFirstOrThrow()
    return { label: row.username, issuer: `Workplace ${row.name}`.trim() }
  }

  /**
   * Starts (or restarts) an enrollment: a new pending secret. Proven by the current password (a
   * stolen token alone cannot switch TOTP on and lock the owner out); an account without a usable
   * password (single sign-on) by a sign-in of the last ten minutes.
   */
  async function enroll(actor: Actor, body: TotpEnrollBody) {
    const proof = await db
      .selectFrom('users as u')
      .innerJoin('access_tokens as t', (join) =>
        join.onRef('t.user_id', '=', 'u.id').onRef('t.tenant_id', '=', 'u.tenant_id'),
      )
      .select([
        'u.password_hash',
        sql<boolean>`t.created_at > now() - make_interval(secs => ${RECENT_SIGN_IN_SECONDS})`.as('recent'),
      ])
      .where('u.tenant_id', '=', actor.tenantId)
      .where('u.id', '=', actor.userId)
      .where('t.id', '=', actor.tokenId)
      .executeTakeFirstOrThrow()
    if (hasUsablePassword(proof.password_hash)) {
      if (body.password === undefined || !(await verifyPassword(proof.password_hash, body.password)))
        throw invalid({ password: ['is missing or wrong'] }, 'Confirm with your current password', 'invalid_password')
    } else if (!proof.recent)
      throw forbidden('Sign in again (within ten minutes) to enroll a second factor', 'recent_sign_in_required')
    const existing = await loadTotp(db, actor.tenantId, actor.userId)
    if (existing?.enabled_at) throw conflict('totp_already_enabled', 'TOTP is already enabled; disable it first')
    const secret = new Secret({ size: 20 }).base32
    const sealed = box.seal(secret)
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('user_totp')
        .values({ tenant_id: actor.tenantId, user_id: actor.userId, secret: sealed })
        .onConflict((oc) =>
          oc.columns(['tenant_id', 'user_id']).doUpdateSet({
            secret: sealed,
            enabled_at: null,
            last_step: 0,
            failed_attempts: 0,
            locked_until: null,
            recovery_codes: [],
            updated_at: new Date().toISOString(),
          }),
        )
        .execute()
      await recordAudit(trx, {
        tenantId: actor.tenantId,
        action: 'totp.enroll',
        targetType: 'user',
        targetId: actor.userId,
      })
    })
    const { label: name, issuer } = await label(actor)
    return { secret, otpauth_url: totpOf(secret, name, issuer).toString() }
  }

  /** Confirms the pending secret with a code: TOTP is on; answers the recovery codes (once). */
  async function confirm(actor: Actor, body: TotpCodeBody) {
    const row = await loadTotp(db, actor.tenantId, actor.userId)
    if (!row) throw conflict('totp_not_enrolled', 'Start with POST /api/users/current/totp')
    if (row.enabled_at) throw conflict('totp_already_enabled', 'TOTP is already enabled')
    await reserveAttempt(db, actor.tenantId, actor.userId)
    const step = stepOf(box.open(row.secret), body.code)
    if (step === undefined) {
      throw invalid({ code: ['is not valid for this secret'] }, 'The code is not valid', 'invalid_totp_code')
    }
    const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode)
    await db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('user_totp')
        .set({
          enabled_at: sql<string>`now()`,
          last_step: step,
          failed_attempts: 0,
          locked_until: null,
          recovery_codes: codes.map(hashRecoveryCode),
          updated_at: sql<string>`now()`,
        })
        .where('tenant_id', '=', actor.tenantId)
        .where('user_id', '=', actor.userId)
        .where('enabled_at', 'is', null)
        .executeTakeFirst()
      if (updated.numUpdatedRows === 0n) throw conflict('totp_already_enabled', 'TOTP is already enabled')
      // an enrollment-only token becomes a full one
      if (actor.mfaEnrollmentOnly)
        await trx
          .updateTable('access_tokens')
          .set({ mfa_enrollment_only: false })
          .where('tenant_id', '=', actor.tenantId)
          .where('id', '=', actor.tokenId)
          .execute()
      await recordAudit(trx, {
        tenantId: actor.tenantId,
        action: 'totp.enable',
        targetType: 'user',
        targetId: actor.userId,
      })
    })
    return { recovery_codes: codes }
  }

  /** Turns TOTP off for oneself, proven by a current code or a recovery code. */
  async function disable(actor: Actor, body: TotpDisableBody): Promise<void> {
    const row = await loadTotp(db, actor.tenantId, actor.userId)
    if (!row?.enabled_at) throw notFound('TOTP factor')
    if ((body.code === undefined) === (body.recovery_code === undefined))
      throw invalid({ code: ['send either code or recovery_code'] })
    const ok = await checkSecondFactor(db, box, actor.tenantId, actor.userId, row, {
      code: body.code,
      recoveryCode: body.recovery_code,
    })
    if (!ok) throw invalid({ code: ['is wrong or was already used'] }, 'The code is not valid', 'invalid_totp_code')
    await remove(actor, actor.userId, 'totp.disable')
  }

  async function remove(actor: Actor, userId: number, action: string): Promise<boolean> {
    return db.transaction().execute(async (trx) => {
      const deleted = await trx
        .deleteFrom('user_totp')
        .where('tenant_id', '=', actor.tenantId)
        .where('user_id', '=', userId)
        .executeTakeFirst()
      if (deleted.numDeletedRows === 0n) return false
      await recordAudit(trx, { tenantId: actor.tenantId, action, targetType: 'user', targetId: userId })
      return true
    })
  }

  /** An administrator removes another user's factor (a lost phone): they sign in with the password alone again. */
  async function reset(actor: Actor, userId: number): Promise<void> {
    requirePermission(actor, 'users.administrate')
    const user = await db
      .selectFrom('users as u')
      .innerJoin('roles as r', (join) => join.onRef('r.id', '=', 'u.role_id').onRef('r.tenant_id', '=', 'u.tenant_id'))
      .select(['u.id', 'r.permissions'])
      .where('u.tenant_id', '=', actor.tenantId)
      .where('u.id', '=', userId)
      .executeTakeFirst()
    if (!user) throw notFound('User')
    // removing a factor, like changing a password, hands the account over: only for users holding no more
    assertHoldsEvery(actor, user.permissions, 'id', 'belongs to a user holding permissions you do not hold')
    if (!(await remove(actor, userId, 'totp.reset'))) throw notFound('TOTP factor')
  }

  return { enroll, confirm, disable, reset }
}
export type TotpService = ReturnType<typeof createTotpService>

export async function totpRoutes(app: FastifyInstance, { totp }: { totp: TotpService }): Promise<void> {
  const tags = ['two-factor']
  app.post<{ Body: TotpEnrollBody }>(
    '/api/users/current/totp',
    {
      config: { mfaEnrollment: true },
      schema: {
        tags,
        summary: 'Start TOTP enrollment (with your current password): a new secret, pending until confirmed',
        body: TotpEnrollBodySchema,
        response: { 200: TotpEnrollmentSchema, ...errorResponses },
      },
    },
    (request) => totp.enroll(request.actor, request.body ?? {}),
  )

  app.post<{ Body: TotpCodeBody }>(
    '/api/users/current/totp/confirm',
    {
      config: { mfaEnrollment: true },
      schema: {
        tags,
        summary: 'Confirm TOTP with a code from the app: enables it and answers 10 recovery codes (once)',
        body: TotpCodeBodySchema,
        response: { 200: RecoveryCodesSchema, ...errorResponses },
      },
    },
    (request) => totp.confirm(request.actor, request.body),
  )

  app.delete<{ Body: TotpDisableBody }>(
    '/api/users/current/totp',
    {
      schema: {
        tags,
        summary: 'Turn your TOTP off (with a current code or a recovery code)',
        body: TotpDisableBodySchema,
        response: { 204: Type.Null(), ...errorResponses },
      },
    },
    async (request, reply) => {
      await totp.disable(request.actor, request.body)
      return reply.code(204).send()
    },
  )

  app.delete<{ Params: UserParams }>(
    '/api/users/:id/totp',
    {
      schema: {
        tags,
        summary: "Remove a user's TOTP factor (permission users.administrate; audited)",
        params: UserParamsSchema,
        response: { 204: Type.Null(), ...errorResponses },
      },
    },
    async (request, reply) => {
      await totp.reset(request.actor, request.params.id)
      return reply.code(204).send()
    },
  )
}

/** `workplace secrets rotate`: re-seals TOTP secrets under the current key. */
export const totpSecrets: SecretHolder = {
  name: 'user_totp',
  async reseal(db, box, scope = {}) {
    const rows = await db
      .selectFrom('user_totp')
      .select(['tenant_id', 'user_id', 'secret'])
      .$if(scope.tenantId !== undefined, (q) => q.where('tenant_id', '=', scope.tenantId!))
      .execute()
    let changed = 0
    for (const row of rows) {
      if (isSealed(row.secret) && !box.needsResealing(row.secret)) continue
      await db
        .updateTable('user_totp')
        .set({ secret: box.seal(box.open(row.secret)) })
        .where('tenant_id', '=', row.tenant_id)
        .where('user_id', '=', row.user_id)
        .execute()
      changed++
    }
    return changed
  },
}
