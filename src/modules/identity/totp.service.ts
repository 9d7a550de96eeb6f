import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { hasUsablePassword, verifyPassword } from '../../platform/auth/passwords.js'
import { assertHoldsEvery, HOLDER_BEYOND_ACTOR } from '../../platform/auth/permissions.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { conflict, forbidden, invalid, notFound } from '../../platform/http/errors.js'
import { secretBoxFor } from '../../platform/secrets/secret-box.js'
import { checkSecondFactor, reserveAttempt } from './second-factor.service.js'
import { findUserPermissions } from './sign-in.queries.js'
import { hashRecoveryCode, newRecoveryCode, newTotpSecret, stepOf, totpOf } from './totp-codes.js'
import * as queries from './totp.queries.js'
import type { RecoveryCodes, TotpCodeBody, TotpDisableBody, TotpEnrollBody, TotpEnrollment } from './totp.schemas.js'

const RECOVERY_CODES = 10
/** An account without a password (single sign-on) enrolls within this long after signing in. */
const RECENT_SIGN_IN_SECONDS = 10 * 60

export type TotpService = ReturnType<typeof createTotpService>

/** A second factor's event: audited only (a security event, never delivered to automations). */
const totpEvent = (tenantId: number, actorId: number, type: string, userId: number) => ({
  type,
  tenantId,
  actorId,
  subjectType: 'user',
  subjectId: userId,
})

export function createTotpService({ db, config }: AppDeps) {
  const box = secretBoxFor(config.secrets)

  /**
   * Starts (or restarts) an enrollment: a new pending secret. Proven by the current password (a
   * stolen token alone cannot switch TOTP on and lock the owner out); an account without a usable
   * password (single sign-on) by a sign-in of the last ten minutes.
   */
  async function enroll(actor: Actor, body: TotpEnrollBody): Promise<TotpEnrollment> {
    const { tenantId, userId } = actor
    const proof = await queries.findEnrollmentProof(db, tenantId, userId, actor.tokenId, RECENT_SIGN_IN_SECONDS)
    if (hasUsablePassword(proof.password_hash)) {
      if (body.password === undefined || !(await verifyPassword(proof.password_hash, body.password)))
        throw invalid({ password: ['is missing or wrong'] }, 'Confirm with your current password', 'invalid_password')
    } else if (!proof.recent)
      throw forbidden('Sign in again (within ten minutes) to enroll a second factor', 'recent_sign_in_required')
    const existing = await queries.findTotp(db, tenantId, userId)
    if (existing?.enabled_at) throw conflict('totp_already_enabled', 'TOTP is already enabled; disable it first')
    const secret = newTotpSecret()
    await db.transaction().execute(async (trx) => {
      await queries.upsertPendingTotp(trx, tenantId, userId, box.seal(secret))
      await recordDomainEvent(trx, totpEvent(tenantId, userId, 'totp.enrolled', userId))
    })
    const label = await queries.findTotpLabel(db, tenantId, userId)
    return { secret, otpauth_url: totpOf(secret, label.username, `Workplace ${label.name}`.trim()).toString() }
  }

  /** Confirms the pending secret with a code: TOTP is on; answers the recovery codes (once). */
  async function confirm(actor: Actor, body: TotpCodeBody): Promise<RecoveryCodes> {
    const { tenantId, userId } = actor
    const row = await queries.findTotp(db, tenantId, userId)
    if (!row) throw conflict('totp_not_enrolled', 'Start with POST /api/users/current/totp')
    if (row.enabled_at) throw conflict('totp_already_enabled', 'TOTP is already enabled')
    await reserveAttempt(db, tenantId, userId)
    const step = stepOf(box.open(row.secret), body.code)
    if (step === undefined) {
      throw invalid({ code: ['is not valid for this secret'] }, 'The code is not valid', 'invalid_totp_code')
    }
    const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode)
    await db.transaction().execute(async (trx) => {
      const enabled = await queries.enableTotp(trx, tenantId, userId, {
        step,
        recoveryCodes: codes.map(hashRecoveryCode),
      })
      if (!enabled) throw conflict('totp_already_enabled', 'TOTP is already enabled')
      // an enrollment-only token becomes a full one
      if (actor.mfaEnrollmentOnly) await queries.clearEnrollmentOnly(trx, tenantId, actor.tokenId)
      await recordDomainEvent(trx, totpEvent(tenantId, userId, 'totp.enabled', userId))
    })
    return { recovery_codes: codes }
  }

  /** Turns TOTP off for oneself, proven by a current code or a recovery code. */
  async function disable(actor: Actor, body: TotpDisableBody): Promise<void> {
    const row = await queries.findTotp(db, actor.tenantId, actor.userId)
    if (!row?.enabled_at) throw notFound('TOTP factor')
    if ((body.code === undefined) === (body.recovery_code === undefined))
      throw invalid({ code: ['send either code or recovery_code'] })
    const ok = await checkSecondFactor(db, box, actor.tenantId, actor.userId, row, {
      code: body.code,
      recoveryCode: body.recovery_code,
    })
    if (!ok) throw invalid({ code: ['is wrong or was already used'] }, 'The code is not valid', 'invalid_totp_code')
    await remove(actor, actor.userId, 'totp.disabled')
  }

  async function remove(actor: Actor, userId: number, type: 'totp.disabled' | 'totp.reset'): Promise<boolean> {
    return db.transaction().execute(async (trx) => {
      if (!(await queries.deleteTotp(trx, actor.tenantId, userId))) return false
      await recordDomainEvent(trx, totpEvent(actor.tenantId, actor.userId, type, userId))
      return true
    })
  }

  /** An administrator removes another user's factor (a lost phone): they sign in with the password alone again. */
  async function reset(actor: Actor, userId: number): Promise<void> {
    requirePermission(actor, 'users.administrate')
    const user = await findUserPermissions(db, actor.tenantId, userId, { liveOnly: false })
    if (!user) throw notFound('User')
    // removing a factor, like changing a password, hands the account over: only for users holding no more
    assertHoldsEvery(actor, user.permissions, 'id', HOLDER_BEYOND_ACTOR)
    if (!(await remove(actor, userId, 'totp.reset'))) throw notFound('TOTP factor')
  }

  return { enroll, confirm, disable, reset }
}
