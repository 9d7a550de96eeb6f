import type { QuotaLimits } from '../../config.js'
import { currentRequestContext } from '../../platform/audit/request-context.js'
import { UNUSABLE_PASSWORD_HASH } from '../../platform/auth/passwords.js'
import type { Db } from '../../platform/db/schema.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { AppError, conflict } from '../../platform/http/errors.js'
import { assertQuota } from '../../platform/limits/quotas.js'
import { insertUser, USERNAME_PATTERN, usersQuota } from '../users/index.js'
import * as queries from './oidc.queries.js'
import type { ProviderRow } from './oidc.queries.js'
import { recordFailedSignIn, signInEligibleUser } from './sign-in.service.js'

const claimText = (claims: Record<string, unknown>, name: string | null): string | undefined => {
  if (!name) return undefined
  const value = claims[name]
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined
}

const USERNAME = new RegExp(USERNAME_PATTERN)
const EMAIL = /^[^\s@<>"']+@[^\s@<>"']+\.[^\s@<>"']+$/

/** Whether the ID token shows that the provider did multi-factor authentication (tenant's `amr`/`acr` values). */
export function providerDidMfa(
  provider: { mfa_amr_values: string[]; mfa_acr_values: string[] },
  claims: Record<string, unknown>,
): boolean {
  const amr = Array.isArray(claims.amr) ? claims.amr.filter((v): v is string => typeof v === 'string') : []
  const acr = typeof claims.acr === 'string' ? claims.acr : undefined
  return (
    amr.some((value) => provider.mfa_amr_values.includes(value)) ||
    (acr !== undefined && provider.mfa_acr_values.includes(acr))
  )
}

/** Stores the link (issuer, sub) → user and audits it; 409 when the identity is linked to someone else. */
export async function linkIdentity(
  db: Db,
  tenantId: number,
  userId: number,
  identity: { issuer: string; subject: string },
  how: 'verified_email' | 'session' | 'administrator',
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const inserted = await queries.insertIdentityIfNew(trx, tenantId, userId, identity)
    if (!inserted) {
      const owner = await queries.findLinkedUser(trx, tenantId, identity)
      if (owner?.user_id === userId) return
      throw conflict('oidc_identity_taken', 'This identity of the provider is linked to another account')
    }
    // the provider's subject id stays in the audit log: the event (kept, delivered) names the issuer and how
    await recordDomainEvent(trx, {
      type: 'user.identityLinked',
      tenantId,
      actorId: currentRequestContext().actorId,
      subjectType: 'user',
      subjectId: userId,
      data: { issuer: identity.issuer, how },
      audit: { issuer: identity.issuer, subject: identity.subject, how },
    })
  })
}

/**
 * The user of an ID token: by the stored link (issuer, sub). A first sign-in never links by
 * username or by an unverified email (issue 39): it links the one local account with the same email
 * only when the tenant allows it (`link_by_verified_email`) and the token says `email_verified: true`.
 * An identity whose name or email is an existing account's otherwise gets 403 `sso_link_required`
 * (the person links from a signed-in session, or an administrator links). Else, with provisioning on,
 * a new user is created under the rules of `POST /api/users` (and its users quota: 403 `quota_exceeded`,
 * nothing created); else 403 `sso_user_unknown`. Deleted, blacked-out and inactive users are refused.
 */
export async function findOrProvisionUser(
  db: Db,
  tenantId: number,
  provider: ProviderRow,
  claims: Record<string, unknown>,
  quotas: QuotaLimits,
): Promise<number> {
  const subject = String(claims.sub)
  const issuer = String(claims.iss)
  const refuse = async (reason: string, code: string, message: string, userId: number | null = null) => {
    await recordFailedSignIn(db, tenantId, userId, { method: 'sso', reason })
    return new AppError(403, code, message)
  }
  const eligible = async (userId: number) => {
    if (!(await signInEligibleUser(db, tenantId, userId)))
      throw await refuse('user_disabled', 'sso_user_disabled', 'This account is disabled', userId)
    return userId
  }
  const linked = await queries.findLinkedUser(db, tenantId, { issuer, subject })
  if (linked) return eligible(linked.user_id)

  const username = claimText(claims, provider.username_claim)
  const email = claimText(claims, provider.email_claim)?.toLowerCase()
  const emailVerified = claims.email_verified === true
  if (provider.link_by_verified_email && email && emailVerified) {
    const sameEmail = await queries.selectUsersByEmail(db, tenantId, email)
    if (sameEmail.length === 1) {
      const userId = await eligible(sameEmail[0]!.id)
      await linkIdentity(db, tenantId, userId, { issuer, subject }, 'verified_email')
      return userId
    }
  }
  const names = [username, email].filter((n): n is string => n !== undefined).map((n) => n.toLowerCase())
  const taken = names.length > 0 && (await queries.findUserNamed(db, tenantId, names, email))
  if (taken)
    throw await refuse(
      'link_required',
      'sso_link_required',
      'An account of this tenant has this name or email, but the identity is not linked to it: sign in to that ' +
        'account and link the identity, or ask an administrator to link it',
    )
  if (provider.provisioning !== 'create' || provider.default_role_id === null)
    throw await refuse('unknown_user', 'sso_user_unknown', 'No account of this tenant matches this identity')
  const domain = email?.split('@')[1]
  if (provider.allowed_email_domains.length > 0 && (!domain || !provider.allowed_email_domains.includes(domain)))
    throw await refuse(
      'email_domain_not_allowed',
      'sso_user_unknown',
      'No account of this tenant matches this identity, and its email domain may not be provisioned',
    )
  const newUsername = username ?? email
  if (!newUsername)
    throw await refuse(
      'no_username_claim',
      'sso_user_unknown',
      'The identity has neither a username nor an email claim',
    )
  // the rules of POST /api/users (users.schemas.ts): a name the API would refuse is not provisioned either
  const problems: string[] = []
  if (newUsername.length < 3 || newUsername.length > 255 || !USERNAME.test(newUsername)) problems.push('username')
  if (email !== undefined && (email.length > 255 || !EMAIL.test(email))) problems.push('email')
  const firstName = claimText(claims, 'given_name') ?? ''
  const lastName = claimText(claims, 'family_name') ?? ''
  if (firstName.length > 255) problems.push('first_name')
  if (lastName.length > 255) problems.push('last_name')
  if (problems.length > 0)
    throw await refuse(
      `invalid_claims:${problems.join(',')}`,
      'sso_provisioning_refused',
      `The identity cannot become an account of this tenant: its ${problems.join(', ')} would be refused by POST /api/users`,
    )
  const roleId = provider.default_role_id
  const provision = db.transaction().execute(async (trx) => {
    await assertQuota(trx, tenantId, usersQuota, quotas)
    const created = await insertUser(trx, {
      tenant_id: tenantId,
      username: newUsername,
      password_hash: UNUSABLE_PASSWORD_HASH,
      first_name: firstName,
      last_name: lastName,
      email: email ?? null,
      role_id: roleId,
      lang_id: null,
      profile_picture: null,
      street: null,
      zipcode: null,
      city: null,
      phone: null,
      gender: null,
      staff_number: null,
      default_route: null,
    })
    await queries.insertIdentity(trx, tenantId, created.id, { issuer, subject })
    await recordDomainEvent(trx, {
      type: 'user.provisioned',
      tenantId,
      actorId: null,
      subjectType: 'user',
      subjectId: created.id,
      data: { role_id: roleId, issuer },
      audit: { username: [null, newUsername], role_id: [null, roleId], issuer, subject },
    })
    return created.id
  })
  return provision.catch(async (error: unknown) => {
    if (!(error instanceof AppError) || error.code !== 'quota_exceeded') throw error
    // rolled back: no user, no identity, no audit of a provisioning; the refused sign-in is recorded like any other
    await recordFailedSignIn(db, tenantId, null, { method: 'sso', reason: 'quota_exceeded:users' })
    const { used, limit } = error.extensions ?? {}
    throw new AppError(
      error.status,
      error.code,
      `No account can be created for this identity: your organisation has reached its users quota (${used} of ${limit}). ` +
        'Ask an administrator of your organisation',
      error.errors,
      undefined,
      error.extensions,
    )
  })
}
