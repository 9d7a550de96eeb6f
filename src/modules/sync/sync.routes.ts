import { Readable } from 'node:stream'
import type { App } from '../../platform/app-module.js'
import { sendStream } from '../../platform/http/list-response.js'
import { errorResponses } from '../../platform/http/schemas.js'
import { SyncQuerySchema, SyncResponseSchema } from './sync.schemas.js'
import type { SyncService } from './sync.service.js'

export async function syncRoutes(app: App, { sync }: { sync: SyncService }): Promise<void> {
  app.get(
    '/api/sync',
    {
      // long polls hold their request up to `wait` seconds: not among the tenant's requests in flight
      // (docs/limits.md), as the notifications stream is not
      config: { inFlightLimit: false },
      schema: {
        tags: ['sync'],
        description:
          'The calling user’s change feed for offline clients (docs/sync.md): without `cursor` a full snapshot (streamed), with it the changes since; 410 `sync_reset` when the cursor cannot be continued.',
        querystring: SyncQuerySchema,
        response: { 200: SyncResponseSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const answer = await sync.sync(request.actor, request.query)
      return answer instanceof Readable ? sendStream(reply, 'application/json; charset=utf-8', answer) : answer
    },
  )
}
