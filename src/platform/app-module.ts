import type { IncomingMessage, ServerResponse } from 'node:http'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Db } from './db/schema.js'
import type { DomainEventSubscriber } from './events/domain-events.js'
import type { JobHandlers } from './jobs/jobs.js'
import type { SecretHolder } from './secrets/secret-box.js'
import type { SyncSource } from './sync/sync-source.js'

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

/**
 * A domain module: its routes (registered in the authenticated scope unless marked public), jobs, and
 * what it contributes to other modules. The composition root collects every field from `appModules`
 * (`composeApp`, platform/composition.ts); a module that offers a contribution point declares its field
 * by augmenting this interface next to the contract (e.g. `shareTargets` in shared-items/share-targets.ts).
 */
export interface AppModule {
  name: string
  routes?: (app: App, deps: AppDeps) => Promise<void>
  jobs?: (deps: AppDeps) => JobHandlers
  /** Daily/periodic jobs in graphile-worker crontab syntax. */
  cron?: string[]
  /** Tables holding sealed secrets, re-sealed by `workplace secrets rotate`. */
  secretHolders?: SecretHolder[]
  /** Subscribers of every recorded domain event, run in module order (platform/events/domain-events.ts). */
  eventSubscribers?: DomainEventSubscriber[]
  /** Entities offered to offline clients by `GET /api/sync` (issue 43, docs/sync.md). */
  syncSources?: SyncSource[]
}
