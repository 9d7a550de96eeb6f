import type { App } from '../../platform/app-module.js'
import { errorResponses, NoContentSchema } from '../../platform/http/schemas.js'
import {
  SessionListSchema,
  SessionParamsSchema,
  SessionUserParamsSchema,
  UserSessionParamsSchema,
} from './sessions.schemas.js'
import type { SessionsService } from './sessions.service.js'

export async function sessionsRoutes(app: App, { sessions }: { sessions: SessionsService }): Promise<void> {
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

  app.delete(
    '/api/users/current/sessions/:sid',
    {
      schema: {
        tags,
        summary: 'End one of your own sessions (revokes its token)',
        params: SessionParamsSchema,
        response: { 204: NoContentSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      await sessions.revokeMine(request.actor, request.params.sid)
      return reply.code(204).send()
    },
  )

  app.get(
    '/api/users/:id/sessions',
    {
      schema: {
        tags,
        summary: "List a user's sessions (permission users.administrate)",
        params: SessionUserParamsSchema,
        response: { 200: SessionListSchema, ...errorResponses },
      },
    },
    (request) => sessions.ofUser(request.actor, request.params.id),
  )

  app.delete(
    '/api/users/:id/sessions/:sid',
    {
      schema: {
        tags,
        summary: "End a user's session (permission users.administrate)",
        params: UserSessionParamsSchema,
        response: { 204: NoContentSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      await sessions.revokeOfUser(request.actor, request.params.id, request.params.sid)
      return reply.code(204).send()
    },
  )
}
