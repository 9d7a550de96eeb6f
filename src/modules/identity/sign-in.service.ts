import { currentRequestContext } from '../../platform/audit/request-context.js'
import { issueAccessToken, revokeUserTokens } from '../../platform/auth/tokens.js'
import type { Config } from '../../config.js'
import type { Db } from '../../platform/db/schema.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { AppError } from '../../platform/http/errors.js'
import { parseShowQuery } from '../../platform/query/parse-query.js'
import { BASIC_USER_FIELDS, findPresentedUser, userResource } from '../users/index.js'
import * as queries from './sign-in.queries.js'
import { issueTicket } from './tickets.service.js'
import { hasEnabledTotp } from './totp.queries.js'

/** The steps every way of signing in shares (password, single sign-on, second factor). */
export type SignInMethod = 'password' | 'sso' | 'mfa'

/** How long an `mfa_token` (the step between password and second factor) lives. */
export const MFA_TOKEN_TTL_SECONDS = 5 * 60

export interface SignInTarget {
  tenantId: number
  userId: number
  method: SignInMethod
  deviceName?: string | null
  /** The user's role requires MFA and they have none yet: the token may only enroll. */
  mfaEnrollmentOnly?: boolean
}

/** A user who may sign in: exists in the tenant, active, neither deleted nor blacked out. */
export function signInEligibleUser(db: Db, tenantId: number, userId: number) {
  return queries.findSignInEligibleUser(db, tenantId, userId)
}

/**
 * Records a sign-in attempt that failed (no secret, no code: the reason and what was named), an event
 * of its own (no transaction to join): the audit log keeps what was named; the event itself (kept,
 * and never delivered to automations) only the method.
 */
export async function recordFailedSignIn(
  db: Db,
  tenantId: number,
  userId: number | null,
  changes: { method: SignInMethod; reason: string; login?: string },
): Promise<void> {
  await recordDomainEvent(db, {
    type: 'auth.signInFailed',
    tenantId,
    actorId: null,
    ...(userId === null ? { subjectType: 'tenant', subjectId: tenantId } : { subjectType: 'user', subjectId: userId }),
    data: { method: changes.method },
    audit: changes,
  })
}

/**
 * After the first factor (a password): a user with TOTP gets 401 `mfa_required` and an `mfa_token`
 * to complete the sign-in with; a user whose role requires MFA and who has none gets an
 * enrollment-only token. Returns whether the token is enrollment-only.
 */
export async function secondFactorGate(
  db: Db,
  tenantId: number,
  userId: number,
  requiresMfa: boolean,
  deviceName: string | null | undefined,
): Promise<{ mfaEnrollmentOnly: boolean }> {
  if (await hasEnabledTotp(db, tenantId, userId)) {
    const mfaToken = await issueTicket(db, {
      tenantId,
      kind: 'mfa',
      userId,
      ttlSeconds: MFA_TOKEN_TTL_SECONDS,
      data: { device_name: deviceName ?? null },
    })
    throw new AppError(
      401,
      'mfa_required',
      'A second factor is required: send the mfa_token with a TOTP code or a recovery code',
      undefined,
      undefined,
      { mfa_token: mfaToken },
    )
  }
  return { mfaEnrollmentOnly: requiresMfa }
}

/**
 * Issues the access token of a successful sign-in and answers as a password login does: a
 * single-session tenant revokes the user's older tokens (unless `prevent_logout`); the session row
 * keeps user agent and address; the sign-in is audited.
 */
export async function completeSignIn(db: Db, config: Config, target: SignInTarget) {
  const { tenantId, userId } = target
  const tenant = await queries.findTenantSettings(db, tenantId)
  const client = currentRequestContext()
  return db.transaction().execute(async (trx) => {
    const user = await queries.findSessionFlags(trx, tenantId, userId)
    if (tenant.settings?.single_session && !user.prevent_logout) await revokeUserTokens(trx, tenantId, userId)
    const issued = await issueAccessToken(trx, tenantId, userId, config.auth.tokenTtlDays, target.deviceName, {
      mfaEnrollmentOnly: target.mfaEnrollmentOnly,
    })
    await queries.insertSessionActivity(trx, tenantId, {
      tokenId: issued.id,
      userId,
      userAgent: client.userAgent,
      ip: client.ip,
    })
    const method = { method: target.method, ...(target.mfaEnrollmentOnly ? { mfa_enrollment_only: true } : {}) }
    await recordDomainEvent(trx, {
      type: 'auth.signedIn',
      tenantId,
      actorId: userId,
      subjectType: 'user',
      subjectId: userId,
      data: method,
      audit: method,
    })
    const ctx = { db: trx, tenantId, baseUrl: config.baseUrl, appUrl: config.appUrl }
    const presented = await findPresentedUser(
      ctx,
      userId,
      parseShowQuery(userResource, { selects: BASIC_USER_FIELDS.join(',') }, ctx),
    )
    if (!presented) throw new AppError(401, 'invalid_credentials', 'The tenant, username or password is wrong')
    return {
      access_token: issued.token,
      token_type: 'Bearer' as const,
      expires_at: issued.expiresAt,
      password_change_required: user.password_change_required,
      ...(target.mfaEnrollmentOnly ? { mfa_enrollment_required: true } : {}),
      user: presented,
    }
  })
}
