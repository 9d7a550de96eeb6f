import type { Readable } from 'node:stream'
import { Type } from 'typebox'
import type { App } from '../../platform/app-module.js'
import {
  envelope,
  errorResponses,
  IdParamsSchema,
  NullableTimestampSchema,
  TimestampSchema,
} from '../../platform/http/schemas.js'
import { sendList } from '../../platform/http/list-response.js'
import { listQuerySchema } from '../../platform/query/list-query-schema.js'
import { dataExportResource, type DataExports } from './users-data-export.js'

const DataExportSchema = Type.Object(
  {
    id: Type.Integer(),
    user_id: Type.Integer({ description: 'whose data the archive holds' }),
    status: Type.Union([
      Type.Literal('pending'),
      Type.Literal('ready'),
      Type.Literal('failed'),
      Type.Literal('expired'),
    ]),
    size: Type.Union([Type.Integer(), Type.Null()], { description: 'bytes of the ZIP, once ready' }),
    created_at: TimestampSchema,
    ready_at: NullableTimestampSchema,
    expires_at: Type.Union([TimestampSchema, Type.Null()], {
      description: 'when the archive is deleted (7 days after it was made)',
    }),
  },
  { $id: 'DataExport', additionalProperties: false },
)
const Opt = Type.Optional
const DataExportListItemSchema = Type.Object(
  {
    id: Opt(Type.Integer()),
    user_id: Opt(Type.Integer({ description: 'whose data the archive holds' })),
    requested_by: Opt(Type.Union([Type.Integer(), Type.Null()], { description: 'who asked for it' })),
    status: Opt(DataExportSchema.properties.status),
    size: Opt(DataExportSchema.properties.size),
    created_at: Opt(TimestampSchema),
    ready_at: Opt(DataExportSchema.properties.ready_at),
    expires_at: Opt(DataExportSchema.properties.expires_at),
  },
  { additionalProperties: false },
)
const DataExportEnvelopeSchema = Type.Object(
  { status: Type.Literal('success'), data: DataExportSchema },
  { additionalProperties: false },
)
const DownloadLinkSchema = Type.Object(
  {
    status: Type.Literal('success'),
    data: Type.Object(
      {
        url: Type.String({ description: 'works once, without a bearer token, until expires_at' }),
        expires_at: TimestampSchema,
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)
const TokenParamsSchema = Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) })

/** Personal-data exports (GDPR Art. 15/20): request, status, single-use download link, download. */
export async function dataExportRoutes(app: App, { exports }: { exports: DataExports }): Promise<void> {
  const tags = ['users']
  const accepted = { 202: DataExportEnvelopeSchema, ...errorResponses }

  app.post(
    '/api/users/current/data-export',
    {
      schema: {
        tags,
        summary: 'Ask for an archive (ZIP) of all your personal data; a notification tells you when it is ready',
        response: accepted,
      },
    },
    async (request, reply) =>
      reply.code(202).send(envelope(await exports.request(request.actor, request.actor.userId))),
  )

  app.post(
    '/api/users/:id/data-export',
    {
      schema: {
        tags,
        summary: "Ask for an archive of another user's personal data (users.export)",
        params: IdParamsSchema,
        response: accepted,
      },
    },
    async (request, reply) => reply.code(202).send(envelope(await exports.request(request.actor, request.params.id))),
  )

  app.get(
    '/api/data-exports',
    {
      schema: {
        tags,
        summary:
          'Data exports, newest first: every one of the tenant with users.export, else yours and those you asked for',
        querystring: listQuerySchema(dataExportResource),
        response: { 200: Type.Array(DataExportListItemSchema), ...errorResponses },
      },
    },
    async (request, reply) => sendList(reply, await exports.list(request.actor, request.query)),
  )

  app.get(
    '/api/data-exports/:id',
    {
      schema: {
        tags,
        summary: 'Status of a data export (yours, one you asked for, or any with users.export)',
        params: IdParamsSchema,
        response: { 200: DataExportEnvelopeSchema, ...errorResponses },
      },
    },
    async (request) => envelope(await exports.show(request.actor, request.params.id)),
  )

  app.post(
    '/api/data-exports/:id/download-link',
    {
      schema: {
        tags,
        summary: 'A download link for a ready archive: single use, valid for 10 minutes',
        params: IdParamsSchema,
        response: { 200: DownloadLinkSchema, ...errorResponses },
      },
    },
    async (request) => envelope(await exports.link(request.actor, request.params.id)),
  )

  app.get(
    '/api/data-exports/download/:token',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Download an archive by the link of download-link (no bearer token; the link works once)',
        security: [],
        params: TokenParamsSchema,
        response: {
          200: {
            description: 'the ZIP archive',
            content: { 'application/zip': { schema: Type.Unsafe<Readable>(Type.String({ format: 'binary' })) } },
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const file = await exports.download(request.params.token)
      return reply
        .type('application/zip')
        .headers({
          'content-length': file.size,
          'content-disposition': `attachment; filename="${file.fileName}"`,
          'cache-control': 'no-store',
        })
        .send(file.stream)
    },
  )
}
