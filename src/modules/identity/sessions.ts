import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { Type, type Static } from 'typebox'
import type { AppDeps } from '../../platform/app-module.js'
import { recordAudit } from '../../platform/audit/audit-log.js'
import type { Actor } from '../../platform/auth/actor.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { revokeAccessToken } from '../../platform/auth/tokens.js'
import { notFound } from '../../platform/http/errors.js'
import { errorResponses, IdSchema, Nullable, TimestampSchema } from '../../platform/http/schemas.js'

export const SessionSchema = Type.Object(
  {
    id: Type.Integer({ description: 'the access token id' }),
    created_at: TimestampSchema,
    expires_at: TimestampSchema,
    last_used_at: Type.Union([TimestampSchema, Type.Null()], {
      description: 'written at most once a minute per token (and up to a few seconds late)',
    }),
    device_name: Nullable(Type.String()),
    user_agent: Nullable(Type.String()),
    ip: Nullable(Type.String()),
    current: Type.Boolean({ description: 'the token of this request' }),
  },
  { $id: 'Session' },
)
const SessionListSchema = Type.Array(SessionSchema)
const SessionParamsSchema = Type.Object({ sid: IdSchema })
const UserSessionParamsSchema = Type.Object({ id: IdSchema, sid: IdSchema })
const UserParamsSchema = Type.Object({ id: IdSchema })
type SessionParams = Static<typeof SessionParamsSchema>
type UserSessionParams = Static<typeof UserSessionParamsSchema>
type UserParams = Static<typeof UserParamsSchema>
export type Session = Static<typeof SessionSchema>

/** The user's live tokens (not revoked, not expired, not older than the user's logout mark), newest first. */
async function listSessions(db: AppDeps['db'], tenantId: number, userId: number, currentTokenId: number) {
  const rows = await db
    .selectFrom('access_tokens as t')
    .leftJoin('session_activity as s', (join) =>
      join.onRef('s.tenant_id', '=', 't.tenant_id').onRef('s.token_id', '=', 't.id'),
    )
    .innerJoin('users as u', (join) => join.onRef('u.tenant_id', '=', 't.tenant_id').onRef('u.id', '=', 't.user_id'))
    .select(['t.id', 't.created_at', 't.expires_at', 't.device_name', 's.last_used_at', 's.user_agent', 's.ip'])
    .where('t.tenant_id', '=', tenantId)
    .where('t.user_id', '=', userId)
    .where('t.revoked_at', 'is', null)
    .where(sql<boolean>`t.expires_at > now()`)
    .where(sql<boolean>`(u.logout_requested_at is null or t.created_at > u.logout_requested_at)`)
    .orderBy('t.created_at', 'desc')
    .orderBy('t.id', 'desc')
    .execute()
  return rows.map((row): Session => ({
    id: row.id,
    created_at: row.created_at,
    expires_at: row.expires_at,
    last_used_at: row.last_used_at ?? null,
    device_name: row.device_name,
    user_agent: row.user_agent ?? null,
    ip: row.ip ?? null,
    current: row.id === currentTokenId,
  }))
}

export function createSessionsService({ db }: AppDeps) {
  async function userExists(tenantId: number, userId: number): Promise<boolean> {
    const row = await db
      .selectFrom('users')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('id', '=', userId)
      .executeTakeFirst()
    return row !== undefined
  }

  async function revoke(actor: Actor, userId: number, tokenId: number): Promise<void> {
    await db.transaction().execute(async (trx) => {
      const token = await trx
        .selectFrom('access_tokens')
        .select('id')
        .where('tenant_id', '=', actor.tenantId)
        .where('user_id', '=', userId)
        .where('id', '=', tokenId)
        .where('revoked_at', 'is', null)
        .where(sql<boolean>`expires_at > now()`)
        .executeTakeFirst()
      if (!token) throw notFound('Session')
      await revokeAccessToken(trx, actor.tenantId, tokenId)
      await recordAudit(trx, {
        tenantId: actor.tenantId,
        action: 'session.revoke',
        targetType: 'session',
        targetId: tokenId,
        changes: { user_id: userId },
      })
    })
  }

  return {
    mine: (actor: Actor) => listSessions(db, actor.tenantId, actor.userId, actor.tokenId),
    revokeMine: (actor: Actor, tokenId: number) => revoke(actor, actor.userId, tokenId),
    async ofUser(actor: Actor, userId: number) {
      requirePermission(actor, 'users.administrate')
      if (!(await userExists(actor.tenantId, userId))) throw notFound('User')
      return listSessions(db, actor.tenantId, userId, actor.tokenId)
    },
    async revokeOfUser(actor: Actor, userId: number, tokenId: number) {
      requirePermission(actor, 'users.administrate')
      await revoke(actor, userId, tokenId)
    },
  }
}
export type SessionsService = ReturnType<typeof createSessionsService>

export async function sessionsRoutes(app: FastifyInstance, { sessions }: { sessions: SessionsService }): Promise<void> {
  const tags = ['sessions']
  app.get(
    '/api/users/current/sessions',
    {
      schema: {
        tags,
        summary: 'List your own sessions (live access tokens)',
        response: { 200: SessionListSchema, ...errorResponses },
      },
    },
    (request) => sessions.mine(request.actor),
  )

  app.delete<{ Params: SessionParams }>(
    '/api/users/current/sessions/:sid',
    {
      schema: {
        tags,
        summary: 'End one of your own sessions (revokes its token)',
        params: SessionParamsSchema,
        response: { 204: Type.Null(), ...errorResponses },
      },
    },
    async (request, reply) => {
      await sessions.revokeMine(request.actor, request.params.sid)
      return reply.code(204).send()
    },
  )

  app.get<{ Params: UserParams }>(
    '/api/users/:id/sessions',
    {
      schema: {
        tags,
        summary: "List a user's sessions (permission users.administrate)",
        params: UserParamsSchema,
        response: { 200: SessionListSchema, ...errorResponses },
      },
    },
    (request) => sessions.ofUser(request.actor, request.params.id),
  )

  app.delete<{ Params: UserSessionParams }>(
    '/api/users/:id/sessions/:sid',
    {
      schema: {
        tags,
        summary: "End a user's session (permission users.administrate)",
        params: UserSessionParamsSchema,
        response: { 204: Type.Null(), ...errorResponses },
      },
    },
    async (request, reply) => {
      await sessions.revokeOfUser(request.actor, request.params.id, request.params.sid)
      return reply.code(204).send()
    },
  )
}
