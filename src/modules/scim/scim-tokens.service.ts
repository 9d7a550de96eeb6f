import { hash, randomBytes } from 'node:crypto'
import { actingUserId, type Actor } from '../../platform/auth/actor.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import type { Db } from '../../platform/db/schema.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { assertHoldsEvery } from '../../platform/auth/permissions.js'
import { invalidField, notFound } from '../../platform/http/errors.js'
import type { CreateScimTokenBody } from './scim.schemas.js'
import * as queries from './scim-tokens.queries.js'

const SCIM_TOKEN = /^wpscim_([1-9][0-9]{0,15})_([A-Za-z0-9_-]{43})$/
const BEARER = /^Bearer\s+(\S{1,300})\s*$/i

/**
 * `wpscim_<tenant id>_` + 32 random bytes in base64url; only the SHA-256 of the whole token is stored.
 * Its prefix is not `wp_`, so an API route never reads it as an access token (and SCIM routes read only
 * this form): a SCIM token does nothing outside /scim/v2, an access token nothing inside it.
 */
export const generateScimToken = (tenantId: number) => `wpscim_${tenantId}_${randomBytes(32).toString('base64url')}`
const hashScimToken = (token: string) => hash('sha256', token, 'buffer')

/** The token of an `Authorization: Bearer` header when it has the SCIM form (tenant id and hash). */
function scimBearer(header: string | undefined): { tenantId: number; hash: Buffer } | undefined {
  const token = header ? BEARER.exec(header)?.[1] : undefined
  const match = token ? SCIM_TOKEN.exec(token) : null
  if (!token || !match) return undefined
  return { tenantId: Number(match[1]), hash: hashScimToken(token) }
}

/** The unrevoked SCIM token of an `Authorization` header, with its default role's permissions. */
export async function findScimTokenOfHeader(db: Db, header: string | undefined) {
  const bearer = scimBearer(header)
  return bearer ? queries.findScimToken(db, bearer.tenantId, bearer.hash) : undefined
}

/** The role of SCIM-created users when the token names none: the tenant's active role named Employee. */
async function defaultRole(db: Db, tenantId: number, roleId: number | undefined, creator?: Actor): Promise<number> {
  const role = await queries.findDefaultRole(db, tenantId, roleId)
  if (!role && roleId === undefined)
    throw invalidField('default_role_id', 'is required: the tenant has no role named "Employee"')
  if (!role) throw invalidField('default_role_id', 'does not exist')
  if (!role.active) throw invalidField('default_role_id', 'is an inactive role')
  // the SCIM client acts with this role's permissions (it assigns the role): no one grants what they do not hold
  if (creator) assertHoldsEvery(creator, role.permissions, 'default_role_id')
  return role.id
}

/** Creates a SCIM token; its secret is in this answer only. */
export async function createScimToken(db: Db, tenantId: number, creator: Actor | null, body: CreateScimTokenBody) {
  const roleId = await defaultRole(db, tenantId, body.default_role_id, creator ?? undefined)
  const createdBy = creator ? creator.userId : null
  const token = generateScimToken(tenantId)
  return db.transaction().execute(async (trx) => {
    const row = await queries.insertScimToken(trx, tenantId, {
      name: body.name,
      tokenHash: hashScimToken(token),
      defaultRoleId: roleId,
      createdBy,
    })
    // the token itself never: only its name and default role
    await recordDomainEvent(trx, {
      type: 'scimToken.created',
      tenantId,
      actorId: creator ? actingUserId(creator) : null,
      subjectType: 'scimToken',
      subjectId: row.id,
      data: { name: body.name, default_role_id: roleId },
      audit: { name: [null, body.name], default_role_id: [null, roleId] },
    })
    return { ...row, token }
  })
}

export function createScimTokensService(db: Db) {
  /** SCIM tokens can create, change and delete every user and department: both permissions are needed. */
  const requireManage = (actor: Actor) => {
    requirePermission(actor, 'users.administrate')
    requirePermission(actor, 'departments.manage')
  }

  /** Issues a SCIM token (shown once). */
  async function createToken(actor: Actor, body: CreateScimTokenBody) {
    requireManage(actor)
    return createScimToken(db, actor.tenantId, actor, body)
  }

  /** The tenant's SCIM tokens, revoked ones included, without their secret. */
  async function listTokens(actor: Actor) {
    requireManage(actor)
    return queries.selectScimTokens(db, actor.tenantId)
  }

  /** Revokes a SCIM token at once (idempotent for a revoked one). */
  async function revokeToken(actor: Actor, id: number): Promise<void> {
    requireManage(actor)
    await db.transaction().execute(async (trx) => {
      const row = await queries.findScimTokenForUpdate(trx, actor.tenantId, id)
      if (!row) throw notFound('SCIM token')
      if (row.revoked_at !== null) return
      await queries.revokeScimToken(trx, actor.tenantId, id)
      await recordDomainEvent(trx, {
        type: 'scimToken.revoked',
        tenantId: actor.tenantId,
        actorId: actingUserId(actor),
        subjectType: 'scimToken',
        subjectId: id,
      })
    })
  }

  return { createToken, listTokens, revokeToken }
}
export type ScimTokensService = ReturnType<typeof createScimTokensService>
