import { type CompiledQuery, sql } from 'kysely'
import type { FastifyRequest } from 'fastify'
import type { Db } from '../db/schema.js'
import { executeCompiled } from '../db/database.js'
import { spanningTenants } from '../db/citus.js'
import { forbidden, unauthorized } from '../http/errors.js'
import { type Actor, actorColumns, actorOf } from './actor.js'
import type { ActorCache, CachedActor } from './actor-cache.js'
import { accessTokenKey, accessTokenTenant } from './tokens.js'
import { noteTokenUse } from './session-activity.js'

declare module 'fastify' {
  interface FastifyRequest {
    actor: Actor
  }
  interface FastifyContextConfig {
    /** Reachable with a token that may only enroll a second factor (a role requiring MFA). */
    mfaEnrollment?: boolean
  }
}

const BEARER = /^Bearer\s+(wp_[A-Za-z0-9_-]{20,200})\s*$/

function actorQuery(db: Db, tokenHash: Buffer, tenantId: number) {
  return db
    .selectFrom('access_tokens as t')
    .innerJoin('users as u', (join) => join.onRef('u.id', '=', 't.user_id').onRef('u.tenant_id', '=', 't.tenant_id'))
    .innerJoin('roles as r', (join) => join.onRef('r.id', '=', 'u.role_id').onRef('r.tenant_id', '=', 'u.tenant_id'))
    .select(['t.id as token_id', 't.expires_at', 't.mfa_enrollment_only', ...actorColumns(tenantId)])
    .where('t.token_hash', '=', tokenHash)
    .where('t.tenant_id', '=', tenantId)
    .where('t.revoked_at', 'is', null)
    .where(sql<boolean>`t.expires_at > now()`)
    .where('u.deleted_at', 'is', null)
    .where('u.blacked_out_at', 'is', null)
    .where('u.active', '=', true)
    .where(sql<boolean>`(u.logout_requested_at is null or t.created_at > u.logout_requested_at)`)
}

type ActorRow = Awaited<ReturnType<ReturnType<typeof actorQuery>['executeTakeFirst']>>
// Runs on every authenticated request: compiled once, executed with the token hash and tenant id as parameters.
let compiledActorQuery: CompiledQuery | undefined
// placeholders of the compiled query, replaced by each lookup's token hash and tenant id
const HASH_SLOT = Buffer.alloc(0)
const TENANT_SLOT = -1

/** `YYYY-MM-DD HH:MM:SS` (UTC, as the driver hands timestamps out) → ms since epoch. */
const utcMillis = (timestamp: string) => Date.parse(`${timestamp.replace(' ', 'T')}Z`)

/**
 * A token issued before tokens carried their tenant: its tenant is looked up by hash alone first
 * (on Citus a query to every shard, named in the routable-statements allow list).
 */
async function legacyTokenTenant(db: Db, tokenHash: Buffer): Promise<number | undefined> {
  const row = await spanningTenants(db, (on) =>
    on.selectFrom('access_tokens').select('tenant_id').where('token_hash', '=', tokenHash).executeTakeFirst(),
  )
  return row?.tenant_id
}

async function lookupActor(db: Db, token: string, tokenHash: Buffer): Promise<CachedActor | undefined> {
  const tenantId = accessTokenTenant(token) ?? (await legacyTokenTenant(db, tokenHash))
  if (tenantId === undefined) return undefined
  compiledActorQuery ??= actorQuery(db, HASH_SLOT, TENANT_SLOT).compile()
  const parameters = compiledActorQuery.parameters.map((p) =>
    p === HASH_SLOT ? tokenHash : p === TENANT_SLOT ? tenantId : p,
  )
  const rows = await executeCompiled(db, { ...compiledActorQuery, parameters } as CompiledQuery<NonNullable<ActorRow>>)
  const row = rows[0]
  if (!row) return undefined
  const actor: Actor = {
    ...actorOf(row, row.token_id),
    ...(row.mfa_enrollment_only ? { mfaEnrollmentOnly: true } : {}),
  }
  return { actor, expiresAt: utcMillis(row.expires_at) }
}

const actorCaches = new WeakMap<Db, ActorCache>()

/** Makes `resolveActor` on `db` go through `cache` (set up once per app). */
export function useActorCache(db: Db, cache: ActorCache): void {
  actorCaches.set(db, cache)
}

/**
 * Resolves a bearer token to an actor in one query (or none, from the actor cache). Expired, revoked
 * and unknown tokens, tokens of inactive/deleted/blacked-out users, and tokens issued before the
 * user's logout mark are refused.
 */
export async function resolveActor(db: Db, token: string): Promise<Actor | undefined> {
  if (accessTokenTenant(token) === undefined) return undefined
  const key = accessTokenKey(token)
  const lookup = () => lookupActor(db, token, Buffer.from(key, 'base64'))
  const cache = actorCaches.get(db)
  if (!cache) return (await lookup())?.actor
  return cache.resolve(key, lookup)
}

export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization
  if (!header) return undefined
  return BEARER.exec(header)?.[1]
}

/** onRequest hook body: sets `request.actor` or throws 401 (identical for every failure). */
export async function authenticateRequest(db: Db, request: FastifyRequest): Promise<void> {
  const token = bearerToken(request)
  if (!token) throw unauthorized()
  const actor = await resolveActor(db, token)
  if (!actor) throw unauthorized()
  request.actor = actor
  noteTokenUse(db, actor, request)
  if (actor.mfaEnrollmentOnly && !request.routeOptions.config.mfaEnrollment)
    throw forbidden('Your role requires two-factor sign-in: enroll TOTP first', 'mfa_enrollment_required')
}
