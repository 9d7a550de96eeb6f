import type { App } from '../../platform/app-module.js'
import { errorResponses } from '../../platform/http/schemas.js'
import { SyncAnswerSchema, SyncQuerySchema } from './sync.schemas.js'
import type { SyncService } from './sync.service.js'

export async function syncRoutes(app: App, sync: SyncService): Promise<void> {
  app.get(
    '/api/sync',
    {
      schema: {
        tags: ['sync'],
        description:
          "The caller's permission-aware change feed (docs/sync.md): without `cursor`, everything the caller may see " +
          "(in pages: `has_more`); with the last answer's `cursor`, only what changed since — `upsert` with the data the " +
          "entity's own GET answers, `remove` with `deleted` or `access_lost`. `wait` (seconds) long-polls until " +
          'something changed. A cursor that is invalid, of another user, superseded, too old or from an older feed ' +
          'answers 410 `sync_reset`: sync again without it.',
        querystring: SyncQuerySchema,
        response: { 200: SyncAnswerSchema, ...errorResponses },
      },
    },
    async (request) => {
      const aborted = new AbortController()
      request.raw.once('close', () => aborted.abort())
      return sync.sync(request.actor, request.query, aborted.signal)
    },
  )
}
