import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyRequest, RawServerDefault, RouteGenericInterface } from 'fastify'
import { Type, type Static, type TSchema } from 'typebox'
import type { App } from '../app-module.js'
import type { Actor } from '../auth/actor.js'
import { listQuerySchema, showQuerySchema } from '../query/list-query-schema.js'
import type { ResourceDef } from '../query/resource.js'
import { sendList } from './list-response.js'
import { errorResponses, IdParamsSchema, NoContentSchema } from './schemas.js'

/**
 * The body Fastify's type provider gives a route whose body schema is `S`. Written the way Fastify
 * resolves it, so that a generic route's `request.body` is assignable to it and a concrete schema's
 * handler gets `Static<S>`.
 */
export type BodyOf<S extends TSchema> = FastifyRequest<
  RouteGenericInterface,
  RawServerDefault,
  IncomingMessage,
  { body: S },
  TypeBoxTypeProvider
>['body']

/** `?grant_token=` on a show route that a grant token opens (contract 30). */
export const grantTokenQuery = { grant_token: Type.Optional(Type.String({ maxLength: 4096 })) }

/** The query of a list and of a show route, as their schemas type it. */
export type ListQuery = Static<ReturnType<typeof listQuerySchema>>
export type ShowQuery = Static<ReturnType<typeof showQuerySchema>>

/**
 * What each route calls: the request (its actor), the validated query or body, and the path's `:id`:
 * the record's on the item routes, the parent record's on a collection that names one
 * (`collectionNamesParent`). `grantToken` is the show route's `?grant_token=` when it takes one.
 */
export interface ResourceRouteHandlers<Create extends TSchema = TSchema, Update extends TSchema = TSchema> {
  list?: (request: FastifyRequest, query: ListQuery, parentId: number | undefined) => Promise<Readable | unknown[]>
  show?: (request: FastifyRequest, id: number, query: ShowQuery, grantToken: string | undefined) => Promise<unknown>
  create?: (request: FastifyRequest, body: BodyOf<Create>, parentId: number | undefined) => Promise<unknown>
  update?: (request: FastifyRequest, id: number, body: BodyOf<Update>) => Promise<unknown>
  remove?: (request: FastifyRequest, id: number) => Promise<void>
}

export interface ResourceRoutesOptions<Create extends TSchema, Update extends TSchema> {
  tag: string
  /** `/api/roles` (list, create); with `collectionNamesParent` the `:id` in it names the parent record. */
  collection: string
  /** `/api/roles/:id` (show, update, delete); absent: no item routes. */
  item?: string
  collectionNamesParent?: boolean
  /** The resource whose fields the list and show query keys document. */
  resource: ResourceDef
  itemSchema: TSchema
  bodies: { create?: Create; update?: Update }
  /** The show route: authenticated by its handler (`public`), and whether it takes `?grant_token=`. */
  show?: { public?: boolean; grantToken?: boolean }
  /** A route is registered for each handler given (create and update also need their body schema). */
  handlers: ResourceRouteHandlers<Create, Update>
}

/**
 * Registers the REST routes of a resource (GET list, POST 201, GET one, PUT, DELETE 204) with schemas
 * for every input and response: every resource, plain or content, is routed and documented the same way.
 */
export function registerResourceRoutes<Create extends TSchema = TSchema, Update extends TSchema = TSchema>(
  app: App,
  o: ResourceRoutesOptions<Create, Update>,
): void {
  const tags = [o.tag]
  const { list, show, create, update, remove } = o.handlers
  // the parent's id comes from the collection path only when it names one (its params schema is then declared)
  const collectionParams = o.collectionNamesParent ? { params: IdParamsSchema } : { params: Type.Object({}) }
  const parentId = (params: { id?: number }) => (o.collectionNamesParent ? params.id : undefined)
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
      async (request, reply) => sendList(reply, await list(request, request.query, parentId(request.params))),
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
      async (request, reply) => reply.code(201).send(await create(request, request.body, parentId(request.params))),
    )
  }
  if (!o.item) return
  if (show) {
    const showQuery = showQuerySchema(o.resource)
    const showWithToken = Type.Object({ ...showQuery.properties, ...grantTokenQuery })
    app.get(
      o.item,
      {
        config: o.show?.public ? { public: true } : {},
        schema: {
          tags,
          params: IdParamsSchema,
          querystring: o.show?.grantToken ? showWithToken : showQuery,
          response: { 200: o.itemSchema, ...errorResponses },
        },
      },
      (request) => {
        if (!('grant_token' in request.query)) return show(request, request.params.id, request.query, undefined)
        const { grant_token: token, ...query } = request.query
        return show(request, request.params.id, query, typeof token === 'string' ? token : undefined)
      },
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
      (request) => update(request, request.params.id, request.body),
    )
  }
  if (remove) {
    app.delete(
      o.item,
      { schema: { tags, params: IdParamsSchema, response: { 204: NoContentSchema, ...errorResponses } } },
      async (request, reply) => {
        await remove(request, request.params.id)
        return reply.code(204).send()
      },
    )
  }
}

/** The five use cases of a plain resource's service, each taking the actor first. */
export interface ActorHandlers<Create extends TSchema, Update extends TSchema> {
  list: (actor: Actor, query: ListQuery) => Promise<Readable | unknown[]>
  show: (actor: Actor, id: number, query: ShowQuery) => Promise<unknown>
  create: (actor: Actor, body: BodyOf<Create>) => Promise<unknown>
  update: (actor: Actor, id: number, body: BodyOf<Update>) => Promise<unknown>
  remove: (actor: Actor, id: number) => Promise<void>
}

/** Route handlers calling a service's use cases with the request's actor, query and body. */
export function actorHandlers<Create extends TSchema, Update extends TSchema>(
  service: ActorHandlers<Create, Update>,
): ResourceRouteHandlers<Create, Update> {
  return {
    list: (request, query) => service.list(request.actor, query),
    show: (request, id, query) => service.show(request.actor, id, query),
    create: (request, body) => service.create(request.actor, body),
    update: (request, id, body) => service.update(request.actor, id, body),
    remove: (request, id) => service.remove(request.actor, id),
  }
}
