import { Type } from 'typebox'
import type { App, AppDeps } from '../../platform/app-module.js'
import { errorResponses } from '../../platform/http/schemas.js'
import { listQuerySchema } from '../../platform/query/list-query-schema.js'
import { sendList, sendStream } from '../../platform/http/list-response.js'
import { csvStream, wantsCsv } from '../../platform/http/csv-stream.js'
import { applyListQuery, presentRows } from '../../platform/query/apply-query.js'
import { parseListQuery } from '../../platform/query/parse-query.js'
import { listResource } from '../../platform/query/run-query.js'
import { AUDIT_CSV_COLUMNS, auditResource } from './audit.resource.js'
import { auditLogQuery } from './audit.service.js'

const Opt = Type.Optional
export const AuditRecordSchema = Type.Object({
  id: Opt(Type.Integer()),
  created_at: Opt(Type.String()),
  actor_id: Opt(Type.Union([Type.Integer(), Type.Null()])),
  actor: Opt(
    Type.Union([Type.String(), Type.Null()], {
      description: '`scim:<token id>` when a SCIM client made the change (actor_id is null then)',
    }),
  ),
  action: Opt(Type.String({ description: 'stable dotted name, e.g. user.blackout' })),
  target_type: Opt(Type.String()),
  target_id: Opt(Type.Union([Type.String(), Type.Null()])),
  changes: Opt(
    Type.Record(Type.String(), Type.Unknown(), {
      description: '{field: [before, after]}; secrets and hashes redacted',
    }),
  ),
  request_id: Opt(Type.Union([Type.String(), Type.Null()])),
  ip: Opt(Type.Union([Type.String(), Type.Null()])),
  user_agent: Opt(Type.Union([Type.String(), Type.Null()])),
})

/** `GET /api/administration/audit-log` (permission `audit.view`): JSON with the query conventions, or CSV. */
export async function auditRoutes(app: App, { db }: AppDeps): Promise<void> {
  app.get(
    '/api/administration/audit-log',
    {
      schema: {
        tags: ['audit'],
        description: 'Administrative changes, newest first. `Accept: text/csv` exports the same query as CSV.',
        querystring: listQuerySchema(auditResource),
        response: { 200: Type.Array(AuditRecordSchema), ...errorResponses },
      },
    },
    async (request, reply) => {
      const { ctx, base } = auditLogQuery(db, request.actor)
      const raw = request.query
      if (wantsCsv(request.headers.accept)) {
        const parsed = parseListQuery(auditResource, raw, ctx)
        const query = applyListQuery(base, auditResource, parsed, ctx)
        reply.header('content-disposition', 'attachment; filename="audit-log.csv"')
        return sendStream(
          reply,
          'text/csv; charset=utf-8',
          csvStream(
            query,
            (rows) => presentRows(auditResource, parsed, rows, ctx),
            AUDIT_CSV_COLUMNS,
            (item, c) => (c === 'changes' ? JSON.stringify(item[c] ?? {}) : (item[c] ?? '')),
          ),
        )
      }
      return sendList(reply, await listResource(ctx, auditResource, base, raw))
    },
  )
}
