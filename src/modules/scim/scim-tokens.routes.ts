import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { errorResponses } from '../../platform/http/schemas.js'
import {
  CreatedScimTokenSchema,
  CreateScimTokenBodySchema,
  ScimTokenParamsSchema,
  ScimTokenSchema,
} from './scim.schemas.js'
import type { ScimTokensService } from './scim-tokens.service.js'

/** /api/administration/scim-tokens: issue (shown once), list (without secret), revoke. */
export async function scimTokensRoutes(
  root: FastifyInstance,
  { tokens }: { tokens: ScimTokensService },
): Promise<void> {
  const app = root.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['scim']
  app.post(
    '/api/administration/scim-tokens',
    {
      schema: {
        tags,
        summary: 'Issue a SCIM token (its secret is in this answer only)',
        description:
          'Needs `users.administrate` and `departments.manage`: a SCIM client creates, changes and deletes users and departments.',
        body: CreateScimTokenBodySchema,
        response: { 201: CreatedScimTokenSchema, ...errorResponses },
      },
    },
    async (request, reply) => reply.code(201).send(await tokens.createToken(request.actor, request.body)),
  )
  app.get(
    '/api/administration/scim-tokens',
    {
      schema: {
        tags,
        summary: 'List SCIM tokens (never their secret)',
        response: { 200: Type.Array(ScimTokenSchema), ...errorResponses },
      },
    },
    async (request) => tokens.listTokens(request.actor),
  )
  app.delete(
    '/api/administration/scim-tokens/:id',
    {
      schema: {
        tags,
        summary: 'Revoke a SCIM token at once',
        params: ScimTokenParamsSchema,
        response: { 204: Type.Null({ description: 'revoked' }), ...errorResponses },
      },
    },
    async (request, reply) => {
      await tokens.revokeToken(request.actor, request.params.id)
      return reply.code(204).send(null)
    },
  )
}
