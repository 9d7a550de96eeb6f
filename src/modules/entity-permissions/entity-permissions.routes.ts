import type { App } from '../../platform/app-module.js'
import { Type } from 'typebox'
import { errorResponses, IdParamsSchema, NoContentSchema } from '../../platform/http/schemas.js'
import { showQuerySchema } from '../../platform/query/list-query-schema.js'
import { entityPermissionResource } from './entity-permissions.resource.js'
import { sendList } from '../../platform/http/list-response.js'
import {
  CreateEntityPermissionBodySchema,
  EntityPermissionSchema,
  TargetParamsSchema,
} from './entity-permissions.schemas.js'
import type { EntityPermissionsService } from './entity-permissions.service.js'

export async function entityPermissionsRoutes(
  app: App,
  { grants }: { grants: EntityPermissionsService },
): Promise<void> {
  const tags = ['entity-permissions']
  app.get(
    '/api/entity-permissions/:targetEntity/:targetEntityId',
    {
      schema: {
        tags,
        params: TargetParamsSchema,
        querystring: showQuerySchema(entityPermissionResource),
        response: { 200: Type.Array(EntityPermissionSchema), ...errorResponses },
      },
    },
    async (request, reply) => {
      const params = request.params
      return sendList(
        reply,
        await grants.listTargetGrants(request.actor, params.targetEntity, params.targetEntityId, request.query),
      )
    },
  )
  app.get(
    '/api/entity-permissions/:id',
    {
      schema: {
        tags,
        params: IdParamsSchema,
        querystring: showQuerySchema(entityPermissionResource),
        response: { 200: EntityPermissionSchema, ...errorResponses },
      },
    },
    (request) => grants.getGrant(request.actor, request.params.id, request.query),
  )
  app.post(
    '/api/entity-permissions',
    {
      schema: {
        tags,
        body: CreateEntityPermissionBodySchema,
        response: { 200: EntityPermissionSchema, 201: EntityPermissionSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { record, created } = await grants.createGrant(request.actor, request.body)
      return reply.code(created ? 201 : 200).send(record)
    },
  )
  app.delete(
    '/api/entity-permissions/:id',
    {
      schema: { tags, params: IdParamsSchema, response: { 204: NoContentSchema, ...errorResponses } },
    },
    async (request, reply) => {
      await grants.deleteGrant(request.actor, request.params.id)
      return reply.code(204).send()
    },
  )
}
