import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { Db } from '../db/schema.js'
import { isMigrated, ping } from '../db/migrate.js'
import { AppError } from './errors.js'
import { errorResponses } from './schemas.js'

const StatusSchema = Type.Object({ status: Type.Literal('ok') })

/** Liveness (process up) and readiness (database reachable, migrations applied). */
export async function healthRoutes(app: FastifyInstance, { db }: { db: Db }): Promise<void> {
  let migrated = false
  app.get(
    '/health/live',
    { config: { public: true }, schema: { tags: ['health'], security: [], response: { 200: StatusSchema } } },
    async () => ({ status: 'ok' as const }),
  )
  app.get(
    '/health/ready',
    {
      config: { public: true },
      schema: { tags: ['health'], security: [], response: { 200: StatusSchema, ...errorResponses } },
    },
    async () => {
      try {
        await ping(db)
        migrated ||= await isMigrated(db)
      } catch {
        throw new AppError(503, 'not_ready', 'The database is not reachable')
      }
      if (!migrated) throw new AppError(503, 'not_ready', 'Migrations are pending')
      return { status: 'ok' as const }
    },
  )
}
