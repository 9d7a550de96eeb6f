import { boundedJsonParser } from '../../platform/http/json-body.js'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type, type TSchema } from 'typebox'
import { compileValidator } from '../../platform/validation/validator.js'
import type { AppDeps } from '../../platform/app-module.js'
import { serviceProviderConfig, resourceTypes, schemas, listOf } from './scim.discovery.js'
import { registerScimErrorHandling, ScimError, SCIM_CONTENT_TYPE } from './scim.errors.js'
import {
  listResponseOf,
  PatchOpSchema,
  ScimDocumentListSchema,
  ScimDocumentSchema,
  ScimGroupInputSchema,
  ScimGroupSchema,
  ScimIdParamsSchema,
  ScimListQuerySchema,
  ScimShowQuerySchema,
  ScimUserInputSchema,
  ScimUserSchema,
  scimErrorResponses,
} from './scim.schemas.js'
import { createScimGroupsService } from './scim-groups.service.js'
import { findScimTokenOfHeader } from './scim-tokens.service.js'
import { createScimUsersService } from './scim-users.service.js'
import { scimActor } from './scim.resources.js'

export const SCIM_PREFIX = '/scim/v2'

/** The SCIM client of a request: its token's default role for the users it creates. */
const clients = new WeakMap<FastifyRequest, { defaultRoleId: number }>()

function defaultRoleOf(request: FastifyRequest): number {
  const client = clients.get(request)
  if (!client) throw new ScimError(401, 'Authentication required: send a valid SCIM bearer token')
  return client.defaultRoleId
}

/** A resource as the response schema describes it; a mismatch is a bug of ours (500), never sent as is. */
function checked<T extends TSchema>(schema: T, name: string) {
  const validator = compileValidator(schema)
  return (value: unknown) => {
    if (!validator.Check(value)) throw new Error(`SCIM response does not match the ${name} schema`)
    return value
  }
}
const asUser = checked(ScimUserSchema, 'User')
const asGroup = checked(ScimGroupSchema, 'Group')
const asUserList = checked(listResponseOf(ScimUserSchema), 'User list')
const asGroupList = checked(listResponseOf(ScimGroupSchema), 'Group list')

/** SCIM answers: application/scim+json, serialized as built (extension URNs as keys, projected attributes). */
const scim = (reply: FastifyReply, status = 200, etag?: string) => {
  if (etag) reply.header('etag', etag)
  return reply.code(status).type(SCIM_CONTENT_TYPE).serializer(JSON.stringify)
}

const common = {
  tags: ['scim'],
  description:
    'SCIM 2.0 (RFC 7643/7644). Needs a SCIM token (`wpscim_…`, from POST /api/administration/scim-tokens); errors are RFC 7644 documents with `scimType`. Connecting Entra ID and Okta: docs/scim.md.',
  security: [{ scimBearer: [] }],
  consumes: ['application/scim+json', 'application/json'],
  produces: ['application/scim+json'],
}
const ifMatch = (request: FastifyRequest) => {
  const header = request.headers['if-match']
  return typeof header === 'string' ? header : undefined
}

/**
 * The SCIM 2.0 service provider (RFC 7643/7644) at /scim/v2: the tenant is the SCIM token's. Routes are
 * `public` for the API's own authentication, and authenticated here by SCIM tokens only.
 */
export async function scimRoutes(root: FastifyInstance, deps: AppDeps): Promise<void> {
  const { db } = deps
  const users = createScimUsersService(deps)
  const groups = createScimGroupsService(deps)
  const base = `${deps.config.baseUrl}${SCIM_PREFIX}`
  const docsUrl = `${deps.config.baseUrl}/docs`

  await root.register(
    async (scope) => {
      registerScimErrorHandling(scope)
      scope.addContentTypeParser('application/scim+json', { parseAs: 'string' }, boundedJsonParser(scope))
      scope.addHook('onRequest', async (request) => {
        const token = await findScimTokenOfHeader(db, request.headers.authorization)
        if (!token) throw new ScimError(401, 'Authentication required: send a valid SCIM bearer token')
        request.actor = scimActor(token.tenant_id, token.id, token.permissions ?? [])
        clients.set(request, { defaultRoleId: token.default_role_id })
      })
      const app = scope.withTypeProvider<TypeBoxTypeProvider>()
      const config = { public: true }

      // --- discovery
      app.get(
        '/ServiceProviderConfig',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.serviceProviderConfig',
            summary: 'What this SCIM service provider supports',
            response: { 200: ScimDocumentSchema, ...scimErrorResponses },
          },
        },
        async (_request, reply) => scim(reply).send(serviceProviderConfig(base, docsUrl)),
      )
      app.get(
        '/ResourceTypes',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.resourceTypes.list',
            summary: 'SCIM resource types',
            response: { 200: ScimDocumentListSchema, ...scimErrorResponses },
          },
        },
        async (_request, reply) => scim(reply).send(listOf(resourceTypes(base))),
      )
      app.get(
        '/ResourceTypes/:id',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.resourceTypes.get',
            summary: 'One SCIM resource type',
            params: ScimIdParamsSchema,
            response: { 200: ScimDocumentSchema, ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          const found = resourceTypes(base).find((r) => r.id === request.params.id)
          if (!found) throw new ScimError(404, `Resource type ${request.params.id} not found`)
          return scim(reply).send(found)
        },
      )
      app.get(
        '/Schemas',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.schemas.list',
            summary: 'SCIM schemas',
            response: { 200: ScimDocumentListSchema, ...scimErrorResponses },
          },
        },
        async (_request, reply) => scim(reply).send(listOf(schemas(base))),
      )
      app.get(
        '/Schemas/:id',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.schemas.get',
            summary: 'One SCIM schema',
            params: ScimIdParamsSchema,
            response: { 200: ScimDocumentSchema, ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          const found = schemas(base).find((s) => s.id === request.params.id)
          if (!found) throw new ScimError(404, `Schema ${request.params.id} not found`)
          return scim(reply).send(found)
        },
      )

      // --- Users
      app.get(
        '/Users',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.users.list',
            summary: 'List or filter SCIM users',
            querystring: ScimListQuerySchema,
            response: { 200: listResponseOf(ScimUserSchema), ...scimErrorResponses },
          },
        },
        async (request, reply) => scim(reply).send(asUserList(await users.listUsers(request.actor, request.query))),
      )
      app.post(
        '/Users',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.users.create',
            summary: 'Create a SCIM user',
            body: ScimUserInputSchema,
            response: { 201: ScimUserSchema, ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          const created = await users.createUser(request.actor, defaultRoleOf(request), request.body)
          reply.header('location', created.location)
          return scim(reply, 201, created.etag).send(asUser(created.resource))
        },
      )
      app.get(
        '/Users/:id',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.users.get',
            summary: 'Get a SCIM user',
            params: ScimIdParamsSchema,
            querystring: ScimShowQuerySchema,
            response: { 200: ScimUserSchema, ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          const found = await users.getUser(request.actor, request.params.id, request.query)
          return scim(reply, 200, found.etag).send(asUser(found.resource))
        },
      )
      app.put(
        '/Users/:id',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.users.update',
            summary: 'Replace a SCIM user',
            params: ScimIdParamsSchema,
            body: ScimUserInputSchema,
            response: { 200: ScimUserSchema, ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          const updated = await users.replaceUser(request.actor, request.params.id, request.body, ifMatch(request))
          return scim(reply, 200, updated.etag).send(asUser(updated.resource))
        },
      )
      app.patch(
        '/Users/:id',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.users.patch',
            summary: 'Change a SCIM user (PatchOp)',
            params: ScimIdParamsSchema,
            body: PatchOpSchema,
            response: { 200: ScimUserSchema, ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          const updated = await users.patchUser(request.actor, request.params.id, request.body, ifMatch(request))
          return scim(reply, 200, updated.etag).send(asUser(updated.resource))
        },
      )
      app.delete(
        '/Users/:id',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.users.delete',
            summary: 'Delete a SCIM user (soft delete, restorable)',
            params: ScimIdParamsSchema,
            response: { 204: Type.Null({ description: 'deleted' }), ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          await users.deleteUser(request.actor, request.params.id, ifMatch(request))
          return reply.code(204).send(null)
        },
      )

      // --- Groups
      app.get(
        '/Groups',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.groups.list',
            summary: 'List or filter SCIM groups (departments)',
            querystring: ScimListQuerySchema,
            response: { 200: listResponseOf(ScimGroupSchema), ...scimErrorResponses },
          },
        },
        async (request, reply) => scim(reply).send(asGroupList(await groups.listGroups(request.actor, request.query))),
      )
      app.post(
        '/Groups',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.groups.create',
            summary: 'Create a SCIM group (department)',
            body: ScimGroupInputSchema,
            response: { 201: ScimGroupSchema, ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          const created = await groups.createGroup(request.actor, request.body)
          reply.header('location', created.location)
          return scim(reply, 201, created.etag).send(asGroup(created.resource))
        },
      )
      app.get(
        '/Groups/:id',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.groups.get',
            summary: 'Get a SCIM group',
            params: ScimIdParamsSchema,
            querystring: ScimShowQuerySchema,
            response: { 200: ScimGroupSchema, ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          const found = await groups.getGroup(request.actor, request.params.id, request.query)
          return scim(reply, 200, found.etag).send(asGroup(found.resource))
        },
      )
      app.put(
        '/Groups/:id',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.groups.update',
            summary: 'Replace a SCIM group',
            params: ScimIdParamsSchema,
            body: ScimGroupInputSchema,
            response: { 200: ScimGroupSchema, ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          const updated = await groups.replaceGroup(request.actor, request.params.id, request.body, ifMatch(request))
          return scim(reply, 200, updated.etag).send(asGroup(updated.resource))
        },
      )
      app.patch(
        '/Groups/:id',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.groups.patch',
            summary: 'Change a SCIM group: members added or removed (PatchOp)',
            params: ScimIdParamsSchema,
            body: PatchOpSchema,
            response: { 200: ScimGroupSchema, ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          const updated = await groups.patchGroup(request.actor, request.params.id, request.body, ifMatch(request))
          return scim(reply, 200, updated.etag).send(asGroup(updated.resource))
        },
      )
      app.delete(
        '/Groups/:id',
        {
          config,
          schema: {
            ...common,
            operationId: 'scim.groups.delete',
            summary: 'Delete a SCIM group (the department)',
            params: ScimIdParamsSchema,
            response: { 204: Type.Null({ description: 'deleted' }), ...scimErrorResponses },
          },
        },
        async (request, reply) => {
          await groups.deleteGroup(request.actor, request.params.id, ifMatch(request))
          return reply.code(204).send(null)
        },
      )
    },
    { prefix: SCIM_PREFIX },
  )
}
