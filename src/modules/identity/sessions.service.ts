import type { AppDeps } from '../../platform/app-module.js'
import { actingUserId, type Actor } from '../../platform/auth/actor.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { revokeAccessToken } from '../../platform/auth/tokens.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { notFound } from '../../platform/http/errors.js'
import * as queries from './sessions.queries.js'
import type { Session } from './sessions.schemas.js'

export type SessionsService = ReturnType<typeof createSessionsService>

export function createSessionsService({ db }: AppDeps) {
  async function listSessions(tenantId: number, userId: number, currentTokenId: number): Promise<Session[]> {
    const rows = await queries.selectLiveSessions(db, tenantId, userId)
    return rows.map((row) => ({
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

  async function revoke(actor: Actor, userId: number, tokenId: number): Promise<void> {
    await db.transaction().execute(async (trx) => {
      if (!(await queries.findLiveToken(trx, actor.tenantId, userId, tokenId))) throw notFound('Session')
      await revokeAccessToken(trx, actor.tenantId, tokenId)
      await recordDomainEvent(trx, {
        type: 'session.revoked',
        tenantId: actor.tenantId,
        actorId: actingUserId(actor),
        subjectType: 'session',
        subjectId: tokenId,
        data: { user_id: userId },
        audit: { user_id: userId },
      })
    })
  }

  return {
    /** Your own live sessions, newest first. */
    mine: (actor: Actor) => listSessions(actor.tenantId, actor.userId, actor.tokenId),
    /** Ends one of your own sessions. */
    revokeMine: (actor: Actor, tokenId: number) => revoke(actor, actor.userId, tokenId),
    /** A user's live sessions (users.administrate). */
    async ofUser(actor: Actor, userId: number) {
      requirePermission(actor, 'users.administrate')
      if (!(await queries.userExists(db, actor.tenantId, userId))) throw notFound('User')
      return listSessions(actor.tenantId, userId, actor.tokenId)
    },
    /** Ends a user's session (users.administrate). */
    async revokeOfUser(actor: Actor, userId: number, tokenId: number) {
      requirePermission(actor, 'users.administrate')
      await revoke(actor, userId, tokenId)
    },
  }
}
