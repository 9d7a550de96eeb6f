import type { Readable } from 'node:stream'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type, type TSchema } from 'typebox'
import type { Actor } from '../auth/actor.js'
import type { RawListQuery } from '../query/parse-query.js'
import { listQuerySchema, showQuerySchema } from '../query/list-query-schema.js'
import type { ResourceDef } from '../query/resource.js'
import { sendList } from './list-response.js'
import { errorResponses, IdParamsSchema } from './schemas.js'

/**
 * What each route calls: the request (its actor, query and body) and the path's `:id`: the record's on
 * the item routes, the parent record's on a collection that names one (`collectionNamesParent`).
 */
export interface ResourceRouteHandlers {
  list?: (request: FastifyRequest, parentId: number | undefined) => Promise<Readable | unknown[]>
  show?: (request: FastifyRequest, id: number) => Promise<unknown>
  create?: (request: FastifyRequest, parentId: number | undefined) => Promise<unknown>
  update?: (request: FastifyRequest, id: number) => Promise<unknown>
  remove?: (request: FastifyRequest, id: number) => Promise<void>
}

export interface ResourceRoutesOptions {
  tag: string
  /** `/api/roles` (list, create); with `collectionNamesParent` the `:id` in it names the parent record. */
  collection: string
  /** `/api/roles/:id` (show, update, delete); absent: no item routes. */
  item?: string
  collectionNamesParent?: boolean
  /** The resource whose fields the list and show query keys document. */
  resource: ResourceDef
  itemSchema: TSchema
  bodies: { create?: TSchema; update?: TSchema }
  /** The show route: authenticated by its handler (`public`), and query keys besides the conventions'. */
  show?: { public?: boolean; query?: Record<string, TSchema> }
  /** A route is registered for each handler given (create and update also need their body schema). */
  handlers: ResourceRouteHandlers
}

/**
 * Registers the REST routes of a resource (GET list, POST 201, GET one, PUT, DELETE 204) with schemas
 * for every input and response: every resource, plain or content, is routed and documented the same way.
 */
export function registerResourceRoutes(app: FastifyInstance, o: ResourceRoutesOptions): void {
  const tags = [o.tag]
  const id = (request: FastifyRequest) => (request.params as { id: number }).id
  const { list, show, create, update, remove } = o.handlers
  const collectionParams = o.collectionNamesParent ? { params: IdParamsSchema } : {}
  const parentId = (request: FastifyRequest) => (o.collectionNamesParent ? id(request) : undefined)
  if (list) {
    app.get(
      o.collection,
      {
        schema: {
          tags,
          ...collectionParams,
          querystring: listQuerySchema(o.resource),
          response: { 200: Type.Array(o.itemSchema), ...errorResponses },
        },
      },
      async (request, reply) => sendList(reply, await list(request, parentId(request))),
    )
  }
  if (create && o.bodies.create) {
    app.post(
      o.collection,
      {
        schema: {
          tags,
          ...collectionParams,
          body: o.bodies.create,
          response: { 201: o.itemSchema, ...errorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await create(request, parentId(request))),
    )
  }
  if (!o.item) return
  if (show) {
    app.get(
      o.item,
      {
        config: o.show?.public ? { public: true } : {},
        schema: {
          tags,
          params: IdParamsSchema,
          querystring: showQuerySchema(o.resource, o.show?.query),
          response: { 200: o.itemSchema, ...errorResponses },
        },
      },
      (request) => show(request, id(request)),
    )
  }
  if (update && o.bodies.update) {
    app.put(
      o.item,
      {
        schema: {
          tags,
          params: IdParamsSchema,
          body: o.bodies.update,
          response: { 200: o.itemSchema, ...errorResponses },
        },
      },
      (request) => update(request, id(request)),
    )
  }
  if (remove) {
    app.delete(
      o.item,
      { schema: { tags, params: IdParamsSchema, response: { 204: Type.Null(), ...errorResponses } } },
      async (request, reply) => {
        await remove(request, id(request))
        return reply.code(204).send()
      },
    )
  }
}

/** The five use cases of a plain resource's service, each taking the actor first. */
export interface ActorHandlers {
  list: (actor: Actor, query: RawListQuery) => Promise<unknown>
  show: (actor: Actor, id: number, query: RawListQuery) => Promise<unknown>
  create: (actor: Actor, body: never) => Promise<unknown>
  update: (actor: Actor, id: number, body: never) => Promise<unknown>
  remove: (actor: Actor, id: number) => Promise<void>
}

/** Route handlers calling a service's use cases with the request's actor, query and body. */
export function actorHandlers(service: ActorHandlers): ResourceRouteHandlers {
  return {
    list: async (request) => (await service.list(request.actor, request.query as RawListQuery)) as Readable | unknown[],
    show: (request, id) => service.show(request.actor, id, request.query as RawListQuery),
    create: (request) => service.create(request.actor, request.body as never),
    update: (request, id) => service.update(request.actor, id, request.body as never),
    remove: (request, id) => service.remove(request.actor, id),
  }
}
