import { errors as joseErrors, importJWK, jwtVerify, SignJWT, type JWTPayload } from 'jose'
import { type Actor, actorOf } from '../../platform/auth/actor.js'
import type { Db } from '../../platform/db/schema.js'
import { AppError } from '../../platform/http/errors.js'
import type { SecretBox } from '../../platform/secrets/secret-box.js'
import { currentSigningKey, publicJwks, SIGNING_ALG } from '../../platform/keys/signing-keys.js'
import { targetClaim, type ShareTargetId } from './share-targets.js'
import { findTenantIdBySlug, findTokenHolder, sharedItemAdmitsToken } from './shared-items.queries.js'

/**
 * Grant tokens (contract 30): a compact ES256 JWS signed with the platform key (contract 50) that lets
 * the user who resolved a `redirectWithGrantToken` shared item view exactly its one target for five
 * minutes. Verification re-checks the shared item on every use, so deleting or retargeting the item,
 * or taking its `view` grant away from the holder, revokes outstanding tokens at once.
 * Details: docs/decisions/shared-items-grant-tokens.md.
 */

export const GRANT_TOKEN_TTL_SECONDS = 300
const REDIRECT_WITH_GRANT_TOKEN = 'redirectWithGrantToken'

export interface IssueGrantTokenInput {
  /** `BASE_URL`: the `iss` claim. */
  issuer: string
  tenantSlug: string
  userId: number
  sharedItemId: string
  alias: string
  id: ShareTargetId
  /** Opens the sealed private signing key. */
  secrets: SecretBox
  /** Seconds since the epoch (tests); default now. */
  now?: number
}

/** A verified grant: who holds it, through which shared item, for which target. */
export interface VerifiedGrant {
  tenantId: number
  tenantSlug: string
  userId: number
  sharedItemId: string
  alias: string
  id: ShareTargetId
  scope: string[]
  issuedAt: number
  expiresAt: number
  /** The holder as a principal (role, departments) — used for the shared item's view grants. */
  holder: Actor
}

/** Issues a grant token for one user, one shared item and its target. */
export async function issueGrantToken(db: Db, input: IssueGrantTokenInput): Promise<string> {
  const key = await currentSigningKey(db, input.secrets)
  const iat = input.now ?? Math.floor(Date.now() / 1000)
  return new SignJWT({
    tid: input.tenantSlug,
    sid: input.sharedItemId,
    tgt: targetClaim(input.alias, input.id),
    scope: ['view'],
  })
    .setProtectedHeader({ alg: SIGNING_ALG, kid: key.kid, typ: 'JWT' })
    .setIssuer(input.issuer)
    .setSubject(String(input.userId))
    .setIssuedAt(iat)
    .setExpirationTime(iat + GRANT_TOKEN_TTL_SECONDS)
    .sign(key.privateKey)
}

/** Public keys by kid: only the keys the JWKS publishes (current and previous) verify tokens. */
async function verificationKey(db: Db, kid: string | undefined): Promise<CryptoKey | undefined> {
  if (!kid) return undefined
  const jwk = (await publicJwks(db)).keys.find((k) => k.kid === kid)
  if (!jwk) return undefined
  const key = await importJWK(jwk, SIGNING_ALG)
  // an asymmetric JWK imports as a CryptoKey (a secret one would be bytes: never published)
  return key instanceof Uint8Array ? undefined : key
}

interface GrantClaims extends JWTPayload {
  tid?: unknown
  sid?: unknown
  tgt?: unknown
  scope?: unknown
}

async function verifySignature(db: Db, token: string, issuer: string | undefined): Promise<GrantClaims | undefined> {
  if (typeof token !== 'string' || token.length > 4096) return undefined
  try {
    const { payload } = await jwtVerify(
      token,
      async (header) => {
        const key = await verificationKey(db, header.kid)
        if (!key) throw new joseErrors.JWKSNoMatchingKey()
        return key
      },
      { algorithms: [SIGNING_ALG], issuer, requiredClaims: ['sub', 'iat', 'exp', 'tid', 'sid', 'tgt', 'scope'] },
    )
    return payload as GrantClaims
  } catch (error) {
    if (error instanceof joseErrors.JOSEError) return undefined
    throw error
  }
}

/** The token's user as a principal, when they still may act (active, not deleted, not logged out since `iat`). */
async function loadHolder(db: Db, tenantSlug: string, userId: number, issuedAt: number): Promise<Actor | undefined> {
  // the tenant first, so that the user lookup names its tenant (routed to one shard on Citus, docs/citus.md)
  const tenant = await findTenantIdBySlug(db, tenantSlug)
  if (!tenant) return undefined
  const row = await findTokenHolder(db, tenant.id, userId, issuedAt)
  if (!row) return undefined
  return actorOf(row, 0)
}

/** The shared item still exists, still points at the target, still hands out tokens, and `holder` may view it. */
async function sharedItemStillAdmits(
  db: Db,
  holder: Actor,
  sharedItemId: string,
  alias: string,
  storedId: string,
): Promise<boolean> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(sharedItemId)) return false
  return sharedItemAdmitsToken(db, holder, sharedItemId, REDIRECT_WITH_GRANT_TOKEN, alias, storedId)
}

export interface VerifyGrantTokenOptions {
  alias: string
  id: ShareTargetId
  /** Expected `iss` (`BASE_URL`); checked when given. */
  issuer?: string
}

/**
 * Verifies a grant token for one target: signature by a published key, `iss`, unexpired, `tgt` equal
 * to `<alias>:<id>`, `view` in scope, and the shared item still existing and viewable by `sub`.
 * Returns the grant, or undefined for any failure (callers answer 401).
 */
export async function verifyGrantToken(
  db: Db,
  token: string,
  options: VerifyGrantTokenOptions,
): Promise<VerifiedGrant | undefined> {
  const claims = await verifySignature(db, token, options.issuer)
  if (!claims) return undefined
  const wanted = targetClaim(options.alias, options.id)
  if (claims.tgt !== wanted) return undefined
  if (!Array.isArray(claims.scope) || !claims.scope.includes('view')) return undefined
  if (typeof claims.tid !== 'string' || typeof claims.sid !== 'string' || !/^[1-9]\d{0,15}$/.test(claims.sub ?? ''))
    return undefined
  const holder = await loadHolder(db, claims.tid, Number(claims.sub), claims.iat!)
  if (!holder) return undefined
  const storedId = wanted.slice(options.alias.length + 1)
  if (!(await sharedItemStillAdmits(db, holder, claims.sid, options.alias, storedId))) return undefined
  return {
    tenantId: holder.tenantId,
    tenantSlug: claims.tid,
    userId: holder.userId,
    sharedItemId: claims.sid,
    alias: options.alias,
    id: options.id,
    scope: claims.scope.filter((s): s is string => typeof s === 'string'),
    issuedAt: claims.iat!,
    expiresAt: claims.exp!,
    holder,
  }
}

/**
 * A principal that may view exactly one target through a grant token: the holder's identity with no
 * module permissions and no admin bypass, plus `grant` naming the target. Content routes check
 * `grantCoversTarget(actor, alias, id)` and then skip their view check for that one record.
 */
export interface GrantTokenActor extends Actor {
  grant: { sharedItemId: string; alias: string; id: ShareTargetId }
}

/** Whether `actor` came from a grant token for exactly this target. */
export function grantCoversTarget(actor: Actor, alias: string, id: ShareTargetId): boolean {
  const grant = (actor as Partial<GrantTokenActor>).grant
  return grant !== undefined && targetClaim(grant.alias, grant.id) === targetClaim(alias, id)
}

/**
 * For content routes (no Fastify): the principal of a `grant_token` query parameter for one target,
 * or a 401 `invalid_grant_token` for any failure (expired, tampered, wrong target, item deleted,
 * access revoked).
 */
/** `actorFromGrantToken` bound to this API's issuer (`BASE_URL`): what content routes call. */
export function grantTokenActorFor(issuer: string) {
  return (db: Db, token: string, alias: string, id: ShareTargetId) =>
    actorFromGrantToken(db, token, alias, id, { issuer })
}

export async function actorFromGrantToken(
  db: Db,
  token: string,
  alias: string,
  id: ShareTargetId,
  options: { issuer?: string } = {},
): Promise<GrantTokenActor> {
  const grant = await verifyGrantToken(db, token, { alias, id, issuer: options.issuer })
  if (!grant)
    throw new AppError(
      401,
      'invalid_grant_token',
      'The grant token is invalid, expired, or not valid for this resource',
    )
  return {
    ...grant.holder,
    permissions: new Set<string>(),
    isAdmin: false,
    grant: { sharedItemId: grant.sharedItemId, alias, id },
  }
}
