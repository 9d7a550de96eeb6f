import type { App } from '../../platform/app-module.js'
import { Type } from 'typebox'
import { errorResponses, NoContentSchema } from '../../platform/http/schemas.js'
import { listQuerySchema, showQuerySchema } from '../../platform/query/list-query-schema.js'
import { accessResource } from './shared-items.access-log.js'
import { sharedItemResource } from './shared-items.resource.js'
import { sendList } from '../../platform/http/list-response.js'
import { AppError } from '../../platform/http/errors.js'
import { requestedUrlType, type SharedItemResolver } from './shared-items.resolve.js'
import type { AccessRecorder } from './shared-items.access-log.js'
import {
  CreateSharedItemBodySchema,
  ResolveQuerySchema,
  ResolveResultSchema,
  SharedItemAccessSchema,
  SharedItemParamsSchema,
  SharedItemSchema,
  UpdateSharedItemBodySchema,
  type ResolveResult,
  type SharedItemParams,
} from './shared-items.schemas.js'
import type { SharedItemsService } from './shared-items.service.js'

export async function sharedItemsRoutes(
  app: App,
  {
    sharedItems,
    resolver,
    accesses,
  }: { sharedItems: SharedItemsService; resolver: SharedItemResolver; accesses: AccessRecorder },
): Promise<void> {
  const tags = ['shared-items']
  const params = SharedItemParamsSchema
  const idOf = (request: { params: SharedItemParams }) => request.params.id.toLowerCase()

  app.get(
    '/api/shared-items',
    {
      schema: {
        tags,
        querystring: listQuerySchema(sharedItemResource),
        response: { 200: Type.Array(SharedItemSchema), ...errorResponses },
      },
    },
    async (request, reply) => sendList(reply, await sharedItems.listSharedItems(request.actor, request.query)),
  )
  app.get(
    '/api/shared-items/:id',
    {
      schema: {
        tags,
        params,
        querystring: showQuerySchema(sharedItemResource),
        response: { 200: SharedItemSchema, ...errorResponses },
      },
    },
    (request) => sharedItems.getSharedItem(request.actor, idOf(request), request.query),
  )
  app.get(
    '/api/shared-items/:id/resolve',
    {
      schema: {
        tags,
        params,
        querystring: ResolveQuerySchema,
        response: { 200: ResolveResultSchema, ...errorResponses },
      },
    },
    (request) => resolver.resolveSharedItem(request.actor, idOf(request), request.query),
  )

  // The stable URL ({BASE_URL}/shared/{id}): a 302 to the target when the item redirects, else the resolve JSON.
  app.get(
    '/shared/:id',
    {
      schema: {
        tags,
        params,
        querystring: ResolveQuerySchema,
        response: { 200: ResolveResultSchema, 302: Type.Null(), ...errorResponses },
      },
    },
    async (request, reply) => {
      const query = request.query
      const access = {
        tenantId: request.actor.tenantId,
        sharedItemId: idOf(request),
        userId: request.actor.userId ?? null,
        urlType: requestedUrlType(query) ?? null,
      }
      let result: ResolveResult
      try {
        result = await resolver.resolveSharedItem(request.actor, idOf(request), query)
      } catch (error) {
        const status = error instanceof AppError ? error.status : undefined
        if (status === 404 || status === 403)
          accesses.record({ ...access, outcome: status === 404 ? 'not_found' : 'denied' })
        throw error
      }
      const grantToken = result.redirect && result.url ? new URL(result.url).searchParams.has('grant_token') : false
      accesses.record({
        ...access,
        outcome: !result.redirect ? 'resolved_without_redirect' : grantToken ? 'grant_token_issued' : 'redirected',
      })
      if (result.redirect && result.url) return reply.header('cache-control', 'no-store').redirect(result.url, 302)
      return result
    },
  )

  const admin = '/api/administration/shared-items'
  app.get(
    admin,
    {
      schema: {
        tags,
        querystring: listQuerySchema(sharedItemResource),
        response: { 200: Type.Array(SharedItemSchema), ...errorResponses },
      },
    },
    async (request, reply) =>
      sendList(reply, await sharedItems.listAdministrableSharedItems(request.actor, request.query)),
  )
  app.get(
    `${admin}/:id`,
    {
      schema: {
        tags,
        params,
        querystring: showQuerySchema(sharedItemResource),
        response: { 200: SharedItemSchema, ...errorResponses },
      },
    },
    (request) => sharedItems.getAdministrableSharedItem(request.actor, idOf(request), request.query),
  )
  app.post(
    admin,
    { schema: { tags, body: CreateSharedItemBodySchema, response: { 201: SharedItemSchema, ...errorResponses } } },
    async (request, reply) => reply.code(201).send(await sharedItems.createSharedItem(request.actor, request.body)),
  )
  app.put(
    `${admin}/:id`,
    {
      schema: {
        tags,
        params,
        body: UpdateSharedItemBodySchema,
        response: { 200: SharedItemSchema, ...errorResponses },
      },
    },
    (request) => sharedItems.updateSharedItem(request.actor, idOf(request), request.body),
  )
  app.delete(
    `${admin}/:id`,
    { schema: { tags, params, response: { 204: NoContentSchema, ...errorResponses } } },
    async (request, reply) => {
      await sharedItems.deleteSharedItem(request.actor, idOf(request))
      return reply.code(204).send()
    },
  )
  app.get(
    `${admin}/:id/accesses`,
    {
      schema: {
        tags,
        params,
        querystring: listQuerySchema(accessResource),
        response: { 200: Type.Array(SharedItemAccessSchema), ...errorResponses },
      },
    },
    async (request, reply) =>
      sendList(reply, await sharedItems.listAccesses(request.actor, idOf(request), request.query)),
  )
  app.post(
    `${admin}/:id/restore`,
    { schema: { tags, params, response: { 200: SharedItemSchema, ...errorResponses } } },
    (request) => sharedItems.restoreSharedItem(request.actor, idOf(request)),
  )
}
