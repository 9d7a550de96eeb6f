import { Type } from 'typebox'
import type { App } from '../../platform/app-module.js'
import type { Db } from '../../platform/db/schema.js'
import { csvStream, wantsCsv } from '../../platform/http/csv-stream.js'
import { sendList, sendStream } from '../../platform/http/list-response.js'
import { errorResponses, IdParamsSchema, Nullable, TimestampSchema } from '../../platform/http/schemas.js'
import { applyListQuery, presentRows } from '../../platform/query/apply-query.js'
import { listQuerySchema } from '../../platform/query/list-query-schema.js'
import { parseListQuery } from '../../platform/query/parse-query.js'
import { listResource } from '../../platform/query/run-query.js'
import { REACH_CSV_COLUMNS, reachUserResource } from './content-reach.resource.js'
import type { Reading } from './content-reading.js'
import { MyStateSchema } from './content-reading.resource.js'

const Counts = {
  audience: Type.Integer(),
  seen: Type.Integer(),
  confirmed: Type.Integer(),
  pending: Type.Integer({ description: 'not confirmed yet (not seen yet when no confirmation is asked)' }),
}
export const ReachSchema = Type.Object(
  {
    ...Counts,
    requires_reading_confirmation: Type.Boolean(),
    reach_detail: Type.Union([Type.Literal('named'), Type.Literal('counts_only')]),
    by_department: Type.Array(Type.Object({ id: Type.Integer(), name: Type.String(), ...Counts }), {
      description: 'under reach_detail counts_only, departments with fewer than 5 people in the audience are left out',
    }),
  },
  { $id: 'Reach' },
)
const Opt = Type.Optional
export const ReachUserSchema = Type.Object(
  {
    id: Opt(Type.Integer()),
    username: Opt(Nullable(Type.String())),
    first_name: Opt(Nullable(Type.String())),
    last_name: Opt(Nullable(Type.String())),
    role_id: Opt(Nullable(Type.Integer())),
    role: Opt(Nullable(Type.String())),
    departments: Opt(Nullable(Type.String({ description: 'department names, comma-separated' }))),
    state: Opt(Type.String({ description: 'unseen, seen or confirmed' })),
    seen_at: Opt(Nullable(TimestampSchema)),
    confirmed_at: Opt(Nullable(TimestampSchema)),
    reminded_at: Opt(Nullable(TimestampSchema)),
  },
  { $id: 'ReachUser' },
)
export const ReminderSchema = Type.Object(
  { id: Type.Integer(), recipients: Type.Integer(), created_at: TimestampSchema },
  { $id: 'Reminder' },
)

export interface ReadingRouteOptions {
  db: Db
  tag: string
  /** `/api/infoboard/posts/:id` */
  item: string
  label: string
}

/** The reading routes of a content resource: seen, confirmation, reach, its per-person list (JSON or CSV), reminders. */
export async function readingRoutes(app: App, reading: Reading, o: ReadingRouteOptions): Promise<void> {
  const tags = [o.tag]
  const params = IdParamsSchema
  const state = { 200: MyStateSchema, 201: MyStateSchema, ...errorResponses }

  app.post(
    `${o.item}/seen`,
    {
      schema: {
        tags,
        params,
        description: `Records that the caller opened the ${o.label} (idempotent: 201 the first time, then 200).`,
        response: state,
      },
    },
    async (request, reply) => {
      const { created, state: mine } = await reading.markSeen(o.db, request.actor, request.params.id)
      return reply.code(created ? 201 : 200).send(mine)
    },
  )
  app.post(
    `${o.item}/confirmation`,
    {
      schema: {
        tags,
        params,
        description: `Confirms that the caller has read the ${o.label} (idempotent: 201 the first time, then 200) and marks their notifications of it read; 422 \`confirmation_not_required\` when it asks for none.`,
        response: state,
      },
    },
    async (request, reply) => {
      const { created, state: mine } = await reading.confirm(o.db, request.actor, request.params.id)
      return reply.code(created ? 201 : 200).send(mine)
    },
  )
  app.get(
    `${o.item}/reach`,
    {
      schema: {
        tags,
        params,
        description: `Who the ${o.label} reaches now (every active user who may view it) and how many saw and confirmed it; for its editors.`,
        response: { 200: ReachSchema, ...errorResponses },
      },
    },
    async (request) => reading.reach(o.db, request.actor, request.params.id),
  )
  app.get(
    `${o.item}/reach/users`,
    {
      schema: {
        tags,
        params,
        querystring: listQuerySchema(reachUserResource),
        description:
          "The audience person by person, with role, departments and reading state; `filter[state]=pending|seen|confirmed`. `Accept: text/csv` streams the same query as CSV. Needs the module's `reach` permission and the tenant setting `reach_detail: named`.",
        produces: ['application/json', 'text/csv'],
        response: { 200: Type.Array(ReachUserSchema), ...errorResponses },
      },
    },
    async (request, reply) => {
      const { base, ctx } = await reading.reachUsers(o.db, request.actor, request.params.id)
      if (wantsCsv(request.headers.accept)) {
        const parsed = parseListQuery(reachUserResource, request.query, ctx)
        const query = applyListQuery(base, reachUserResource, parsed, ctx)
        reply.header('content-disposition', 'attachment; filename="reach.csv"')
        return sendStream(
          reply,
          'text/csv; charset=utf-8',
          csvStream(query, (rows) => presentRows(reachUserResource, parsed, rows, ctx), REACH_CSV_COLUMNS),
        )
      }
      return sendList(reply, await listResource(ctx, reachUserResource, base, request.query))
    },
  )
  app.post(
    `${o.item}/reminders`,
    {
      schema: {
        tags,
        params,
        description: `Reminds the audience members who have not confirmed the ${o.label} yet (recorded); at most once per 24 hours (429 with Retry-After).`,
        response: { 201: ReminderSchema, ...errorResponses },
      },
    },
    async (request, reply) => reply.code(201).send(await reading.remind(o.db, request.actor, request.params.id)),
  )
}
