import type { FastifyRequest } from 'fastify'
import { Type, type TObject, type TSchema } from 'typebox'
import type { Actor } from '../../platform/auth/actor.js'
import { authenticateRequest } from '../../platform/auth/authenticate.js'
import { unauthorized } from '../../platform/http/errors.js'
import type { Db } from '../../platform/db/schema.js'
import type { App } from '../../platform/app-module.js'
import { grantTokenQuery, registerResourceRoutes } from '../../platform/http/resource-routes.js'
import { Nullable, TimestampSchema } from '../../platform/http/schemas.js'
import type { FieldType } from '../../platform/query/resource.js'
import type { ContentResource } from './content-declaration.js'

const OUTPUT: Record<FieldType, () => TSchema> = {
  id: () => Nullable(Type.Integer()),
  integer: () => Nullable(Type.Integer()),
  string: () => Nullable(Type.String()),
  boolean: () => Type.Boolean(),
  timestamp: () => Nullable(TimestampSchema),
  date: () => Nullable(TimestampSchema),
  uuid: () => Nullable(Type.String()),
  json: () => Type.Unknown(),
}

/** The response schema of a content record, from its field declarations (every field optional: `selects`). */
const recordSchemas = new WeakMap<ContentResource, TObject>()
export function contentRecordSchema(content: ContentResource): TObject {
  const known = recordSchemas.get(content)
  if (known) return known
  const properties = Object.fromEntries(
    Object.entries(content.resource.fields as Record<string, { type: FieldType }>).map(([name, f]) => [
      name,
      Type.Optional(OUTPUT[f.type]()),
    ]),
  )
  for (const [name, output] of Object.entries(content.outputs)) properties[name] = Type.Optional(output)
  const schema = Type.Object(properties, { $id: `${content.alias[0].toUpperCase()}${content.alias.slice(1)}` })
  recordSchemas.set(content, schema)
  return schema
}

/** Create and update body schemas from one map of writable fields (unknown keys → 422). */
export function contentBodies(fields: Record<string, TSchema>, required: string[]) {
  const create = Type.Object(
    Object.fromEntries(Object.entries(fields).map(([k, s]) => [k, required.includes(k) ? s : Type.Optional(s)])),
    { additionalProperties: false },
  )
  const update = Type.Object(Object.fromEntries(Object.entries(fields).map(([k, s]) => [k, Type.Optional(s)])), {
    additionalProperties: false,
  })
  return { create, update }
}

/**
 * How a show route is opened with `?grant_token=` (contract 30): resolves the token for exactly
 * this target to the actor it was issued to, or throws 401. Set by the module that owns the tokens.
 */
export type GrantTokenActor = (db: Db, token: string, alias: string, id: number) => Promise<Actor>

/** Who reads a single target: a grant token for exactly it (visibility bypassed), or the bearer. */
export interface Viewer {
  actor: Actor
  viaGrantToken: boolean
}

export const GrantTokenQuerySchema = Type.Object(grantTokenQuery)

/** Resolves the viewer of a route marked `public`: `grant_token` (`token`) when sent, else the bearer token. */
export async function resolveViewer(
  request: FastifyRequest,
  db: Db,
  alias: string,
  id: number,
  token: string | undefined,
  grantTokens?: GrantTokenActor,
): Promise<Viewer> {
  if (token !== undefined && grantTokens) {
    if (token === '') throw unauthorized()
    return { actor: await grantTokens(db, token, alias, id), viaGrantToken: true }
  }
  await authenticateRequest(db, request)
  return { actor: request.actor, viaGrantToken: false }
}

export interface ContentRouteOptions {
  db: Db
  tag: string
  /** `/api/calendar/events`; with `parentParam` the `:id` in it names the parent record. */
  collection: string
  /** `/api/calendar/events/:id` (omit for nested records without item routes). */
  item?: string
  bodies: { create?: TObject; update?: TObject }
  operations: Array<'list' | 'show' | 'create' | 'update' | 'delete'>
  parentColumn?: string
  /** Show routes accept `grant_token` (and then authenticate themselves). */
  grantTokens?: GrantTokenActor
}

/** Registers the standard routes of a content resource (`registerResourceRoutes`); each handler calls one service function. */
export async function contentRoutes(app: App, content: ContentResource, o: ContentRouteOptions): Promise<void> {
  const scope = (parentId: number | undefined) =>
    o.parentColumn && parentId !== undefined ? { [o.parentColumn]: parentId } : undefined
  const offers = (operation: ContentRouteOptions['operations'][number]) => o.operations.includes(operation)
  const tokens = o.grantTokens
  registerResourceRoutes(app, {
    tag: o.tag,
    collection: o.collection,
    item: o.item,
    collectionNamesParent: o.parentColumn !== undefined,
    resource: content.resource,
    itemSchema: contentRecordSchema(content),
    bodies: o.bodies,
    show: { public: tokens !== undefined, grantToken: true },
    handlers: {
      list: offers('list')
        ? (request, query, parentId) => content.list(o.db, request.actor, query, scope(parentId))
        : undefined,
      create: offers('create')
        ? async (request, body, parentId) => {
            const row = await content.create(o.db, request.actor, body, scope(parentId))
            return content.show(o.db, request.actor, row.id, {}, true)
          }
        : undefined,
      show: offers('show')
        ? async (request, id, query, token) => {
            const viewer = tokens
              ? await resolveViewer(request, o.db, content.alias, id, token, tokens)
              : { actor: request.actor, viaGrantToken: false }
            return content.show(o.db, viewer.actor, id, query, viewer.viaGrantToken)
          }
        : undefined,
      update: offers('update')
        ? async (request, id, body) => {
            const row = await content.update(o.db, request.actor, id, body)
            return content.show(o.db, request.actor, row.id, {}, true)
          }
        : undefined,
      remove: offers('delete')
        ? async (request, id) => {
            await content.remove(o.db, request.actor, id)
          }
        : undefined,
    },
  })
}
