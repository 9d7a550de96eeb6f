import type { FastifyInstance } from 'fastify'
import { Type, type TSchema } from 'typebox'
import type { Actor } from '../auth/actor.js'
import type { RawListQuery } from '../query/parse-query.js'
import { errorResponses, IdParamsSchema } from './schemas.js'
import { listQuerySchema, showQuerySchema } from '../query/list-query-schema.js'
import type { ResourceDef } from '../query/resource.js'
import { sendList } from './list-response.js'

/** The five use cases behind a plain REST resource (list, show, create, update, delete). */
export interface CrudHandlers {
  list: (actor: Actor, query: RawListQuery) => Promise<unknown>
  show: (actor: Actor, id: number, query: RawListQuery) => Promise<unknown>
  create: (actor: Actor, body: never) => Promise<unknown>
  update: (actor: Actor, id: number, body: never) => Promise<unknown>
  remove: (actor: Actor, id: number) => Promise<void>
}

export interface CrudRoutesOptions {
  /** e.g. `/api/roles`; the single-record routes are `${path}/:id`. */
  path: string
  tag: string
  itemSchema: TSchema
  /** The resource whose fields the list and show query keys document. */
  resource: ResourceDef
  createBodySchema: TSchema
  updateBodySchema: TSchema
  handlers: CrudHandlers
}

/**
 * Registers GET list, GET one, POST (201), PUT and DELETE (204) with schemas for every input and
 * response, so that every resource shaped like this is routed and documented the same way.
 */
export function registerCrudRoutes(app: FastifyInstance, options: CrudRoutesOptions): void {
  const { path, handlers, itemSchema } = options
  const tags = [options.tag]
  const id = (params: unknown) => (params as { id: number }).id
  app.get(path, { schema: { tags, querystring: listQuerySchema(options.resource), response: { 200: Type.Array(itemSchema), ...errorResponses } } },
    async (request, reply) => sendList(reply, (await handlers.list(request.actor, request.query as RawListQuery)) as never))
  app.get(`${path}/:id`, { schema: { tags, params: IdParamsSchema, querystring: showQuerySchema(options.resource), response: { 200: itemSchema, ...errorResponses } } },
    (request) => handlers.show(request.actor, id(request.params), request.query as RawListQuery))
  app.post(path, { schema: { tags, body: options.createBodySchema, response: { 201: itemSchema, ...errorResponses } } },
    async (request, reply) => reply.code(201).send(await handlers.create(request.actor, request.body as never)))
  app.put(`${path}/:id`, { schema: { tags, params: IdParamsSchema, body: options.updateBodySchema, response: { 200: itemSchema, ...errorResponses } } },
    (request) => handlers.update(request.actor, id(request.params), request.body as never))
  app.delete(`${path}/:id`, { schema: { tags, params: IdParamsSchema, response: { 204: Type.Null(), ...errorResponses } } },
    async (request, reply) => {
      await handlers.remove(request.actor, id(request.params))
      return reply.code(204).send()
    })
}
