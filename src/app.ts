import { registerJsonBody } from './platform/http/json-body.js'
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerOptions,
  type RouteOptions,
} from 'fastify'
import cors from '@fastify/cors'
import qs from 'qs'
import type { Logger } from 'pino'
import { LazyChildLogger } from './platform/logging.js'
import type { Config } from './config.js'
import type { Db } from './platform/db/schema.js'
import type { AppDeps } from './platform/app-module.js'
import { registerErrorHandling } from './platform/http/error-handler.js'
import { registerValidation } from './platform/http/validation.js'
import { registerStrictQueryKeys } from './platform/http/query-keys.js'
import { registerRequestLog } from './platform/http/request-log.js'
import { registerOpenApi } from './platform/http/openapi.js'
import { authenticateRequest, useActorCache } from './platform/auth/authenticate.js'
import { startActorCache } from './platform/auth/actor-cache.js'
import { flushSessionActivity } from './platform/auth/session-activity.js'
import { AppError } from './platform/http/errors.js'
import { healthRoutes } from './platform/http/health.js'
import { registerRequestContext } from './platform/audit/request-context.js'
import { registerMultipart } from './platform/http/multipart.js'
import { registerMetrics } from './platform/metrics/index.js'
import { appModules } from './modules/index.js'
import { composeApp } from './platform/composition.js'
import { verifyShapedStatements } from './platform/db/database.js'
import { registerWebApp } from './platform/http/web-app.js'
import { registerLimits } from './platform/limits/index.js'
import { limitsRoutes } from './modules/limits/index.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Route is reachable without a bearer token. */
    public?: boolean
  }
}

export interface BuildAppOptions {
  config: Config
  db: Db
  logger?: Logger | boolean
  /** Observes every registered route (the reliability suite builds its route table from it). */
  onRoute?: (route: RouteOptions) => void
  /** A database URL with real sessions, for LISTEN (defaults to config.db.directUrl; never a transaction-mode pooler). */
  databaseUrl?: string
}

const QUERY_PARAMETER_LIMIT = 1000

/** Query objects the parser refused; the onRequest hook turns them into a 400 (a parser cannot throw). */
const refusedQueries = new WeakSet<object>()

function parseQueryString(query: string): Record<string, unknown> {
  try {
    // Bracketed keys become nested objects (filter[read_at][null]=true); depth and key count bounded;
    // null-prototype objects, so a key like filter[hasOwnProperty] is an ordinary (unknown) name.
    return qs.parse(query, {
      depth: 4,
      parameterLimit: QUERY_PARAMETER_LIMIT,
      throwOnLimitExceeded: true,
      arrayLimit: 100,
      plainObjects: true,
    })
  } catch {
    const refused = {}
    refusedQueries.add(refused)
    return refused
  }
}

/** Builds the Fastify app (platform first, then modules). Never listens. */
export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const { config, db } = options
  composeApp(appModules)
  if (config.isTest) verifyShapedStatements()
  const serverOptions = {
    loggerInstance: typeof options.logger === 'object' ? options.logger : undefined,
    logger: typeof options.logger === 'object' ? undefined : (options.logger ?? false) && { level: config.logLevel },
    bodyLimit: config.http.bodyLimit,
    routerOptions: { querystringParser: parseQueryString, ignoreTrailingSlash: true },
    requestIdHeader: 'x-request-id',
    // one line per request instead of two (registerRequestLog)
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => crypto.randomUUID(),
    childLoggerFactory: (
      logger: FastifyBaseLogger,
      bindings: Record<string, unknown>,
      opts: Parameters<FastifyBaseLogger['child']>[1],
    ) => new LazyChildLogger(logger, bindings, opts),
    ajv: undefined,
    // during shutdown our onRequest hook answers 503 problem+json (Fastify's own 503 is plain JSON)
    return503OnClosing: false,
    // on close: idle keep-alive sockets are closed at once, in-flight requests finish
    forceCloseConnections: 'idle',
  } as FastifyServerOptions
  const app = Fastify(serverOptions)
  if (options.onRoute) app.addHook('onRoute', options.onRoute)

  registerRequestContext(app)
  registerValidation(app)
  registerErrorHandling(app)
  registerJsonBody(app)
  await registerMetrics(app, db, config.metrics)
  registerStrictQueryKeys(app)
  registerRequestLog(app)
  // Shutdown: new requests get 503, responses still in flight close their connection, and a keep-alive
  // connection whose response began before close() is ended once it is sent (else close waits for its
  // keep-alive timeout). Connections not yet read are left alone: their requests get the 503.
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  // callback hooks where nothing is awaited: an async hook costs a promise and a microtask per request
  app.addHook('onResponse', (request, _reply, done) => {
    if (closing) request.raw.socket?.end()
    done()
  })
  await app.register(cors, {
    origin: config.http.corsOrigins.length > 0 ? config.http.corsOrigins : false,
    credentials: true,
  })
  await registerMultipart(app, config)
  app.addHook('onSend', (request, reply, payload, done) => {
    // while shutting down, requests still in flight end their keep-alive connection, so close() can finish
    if (closing) reply.header('connection', 'close')
    reply.header('x-content-type-options', 'nosniff')
    reply.header('x-request-id', request.id)
    done(null, payload)
  })
  // session uses noted and not yet written (platform/auth/session-activity.ts) are written on close
  app.addHook('onClose', async () => flushSessionActivity(db).catch(() => undefined))
  const databaseUrl = options.databaseUrl ?? config.db.directUrl
  if (databaseUrl && config.auth.actorCache) {
    const cache = await startActorCache(databaseUrl, (error) =>
      app.log.warn({ err: error }, 'actor cache listener error'),
    )
    useActorCache(db, cache)
    app.addHook('onClose', async () => cache.close())
    // a logout, a role change, a deactivation: answered once every node has been told (actor-cache.ts)
    app.addHook('onSend', (request, _reply, payload, done) => {
      if (!cache.changedActors(request)) return done(null, payload)
      cache
        .announce(db, request.actor?.tenantId)
        .catch((error) => request.log.warn({ err: error }, 'actor change announcement failed'))
        .finally(() => done(null, payload))
    })
  }
  app.addHook('onRequest', async (request) => {
    if (closing)
      throw new AppError(503, 'shutting_down', 'The server is shutting down; retry', undefined, {
        'Retry-After': '1',
        Connection: 'close',
      })
    const query: unknown = request.query
    if (typeof query === 'object' && query !== null && refusedQueries.has(query)) {
      throw new AppError(
        400,
        'malformed_query',
        `The query string has more than ${QUERY_PARAMETER_LIMIT} parameters or is malformed`,
      )
    }
    if (request.is404 || request.routeOptions.config.public) return
    await authenticateRequest(db, request)
  })

  // fair-use limits on every route with an actor (docs/limits.md): after authentication, before the body
  const limits = registerLimits(app, db, config.limits)
  await registerOpenApi(app, config)
  // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- Fastify types its logger as its base logger; it is the pino logger it was given
  const deps: AppDeps = { db, config, log: app.log as unknown as Logger, databaseUrl }
  await app.register(healthRoutes, { db })
  await app.register(limitsRoutes, { db, config, limits })
  // the web app's static files under /app (nothing outside /app: no hook, no plugin)
  registerWebApp(app)
  for (const module of appModules) {
    if (module.routes) await app.register(async (scope) => module.routes!(scope, deps))
  }
  return app
}
