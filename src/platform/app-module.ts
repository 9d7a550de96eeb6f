import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Db } from './db/schema.js'
import type { JobHandlers } from './jobs/jobs.js'
import type { SecretHolder } from './secrets/secret-box.js'

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
  routes?: (app: FastifyInstance, deps: AppDeps) => Promise<void>
  jobs?: (deps: AppDeps) => JobHandlers
  /** Daily/periodic jobs in graphile-worker crontab syntax. */
  cron?: string[]
  /** Tables holding sealed secrets, re-sealed by `workplace secrets rotate`. */
  secretHolders?: SecretHolder[]
}
