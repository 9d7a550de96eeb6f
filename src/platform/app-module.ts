import type { IncomingMessage, ServerResponse } from 'node:http'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Db } from './db/schema.js'
import type { JobHandlers } from './jobs/jobs.js'
import type { SecretHolder } from './secrets/secret-box.js'

/**
 * The app as modules see it: Fastify with TypeBox's type provider, so a route's `params`, `querystring`
 * and `body` schemas type its handler's `request` (validation stays ours: http/validation.ts).
 */
export type App = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>

/** What every module receives at composition time. */
export interface AppDeps {
  db: Db
  config: Config
  log: Logger
  /** A connection URL with real sessions (the direct one, also of the embedded server), for dedicated connections such as LISTEN. */
  databaseUrl?: string
}

/** A domain module: its routes (registered in the authenticated scope unless marked public) and jobs. */
export interface AppModule {
  name: string
  routes?: (app: App, deps: AppDeps) => Promise<void>
  jobs?: (deps: AppDeps) => JobHandlers
  /** Daily/periodic jobs in graphile-worker crontab syntax. */
  cron?: string[]
  /** Tables holding sealed secrets, re-sealed by `workplace secrets rotate`. */
  secretHolders?: SecretHolder[]
}
