import type { Config } from '../../config.js'
import type { Db } from '../../platform/db/schema.js'
import { AppError, invalid } from '../../platform/http/errors.js'
import { secretBoxFor, type SecretBox } from '../../platform/secrets/secret-box.js'
import { completeSignIn, recordFailedSignIn, signInEligibleUser } from './sign-in.service.js'
import { findTicket, useTicket } from './tickets.service.js'
import { hashRecoveryCode, isKnownRecoveryCode, stepOf } from './totp-codes.js'
import * as queries from './totp.queries.js'
import type { TotpRow } from './totp.queries.js'

export const MAX_FAILED_CODES = 5
export const LOCK_SECONDS = 15 * 60

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
export async function reserveAttempt(db: Db, tenantId: number, userId: number): Promise<void> {
  const now = new Date()
  const reserved = await queries.reserveTotpAttempt(db, tenantId, userId, {
    at: now.toISOString(),
    lockEnd: new Date(now.getTime() + LOCK_SECONDS * 1000).toISOString(),
    maxFailed: MAX_FAILED_CODES,
  })
  if (reserved) return
  const row = await queries.findTotp(db, tenantId, userId)
  throw lockedError(row?.locked_until_seconds ?? LOCK_SECONDS)
}

/**
 * Checks a TOTP code (accepted once: its step must be newer than the last accepted one) or a
 * recovery code (removed when used). The attempt is counted first (`reserveAttempt`); the fifth
 * wrong one locks the factor for 15 minutes.
 */
export async function checkSecondFactor(
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
    if (step !== undefined) accepted = await queries.advanceTotpStep(db, tenantId, userId, step)
  } else if (proof.recoveryCode !== undefined) {
    const hashed = hashRecoveryCode(proof.recoveryCode)
    if (isKnownRecoveryCode(row.recovery_codes, hashed))
      accepted = await queries.removeRecoveryCode(db, tenantId, userId, hashed)
  }
  // a correct code releases the count (and the lock its own attempt set)
  if (accepted) await queries.releaseTotpAttempts(db, tenantId, userId)
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
  const row = await queries.findTotp(db, tenantId, userId)
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
  const row = await queries.findTotp(db, tenantId, userId)
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
