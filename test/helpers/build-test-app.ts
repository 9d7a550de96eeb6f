import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import { inRequest } from './routable-statements.js'
import { echoedSecrets, rememberSecrets } from './secret-echo.js'
import { testDb } from './test-database.js'
import { secretBoxFor } from '../../src/platform/secrets/secret-box.js'

let cached: Promise<FastifyInstance> | undefined

export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64')

/** The secret box the test app uses. */
export const testSecrets = () => secretBoxFor(testConfig().secrets)

/**
 * The documented setting for suites whose load is not a tenant's fair use (docs/limits.md, "Tests and the
 * bench"): limits far above what they send, so the limiter still runs on every request.
 */
export const LOAD_TEST_LIMITS: Readonly<Record<string, string>> = {
  RATE_LIMIT_TOKEN_READ: '100000000',
  RATE_LIMIT_TOKEN_WRITE: '100000000',
  RATE_LIMIT_TOKEN_EXPENSIVE: '100000000',
  RATE_LIMIT_TENANT_READ: '100000000',
  RATE_LIMIT_TENANT_WRITE: '100000000',
  RATE_LIMIT_TENANT_EXPENSIVE: '100000000',
  TENANT_MAX_IN_FLIGHT: '10000',
  TENANT_MAX_QUEUED: '100000',
  TENANT_MAX_DB_CONNECTIONS: '10000',
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: process.env.TEST_DB_URL,
    STORAGE_DIR: process.env.TEST_STORAGE_DIR,
    BASE_URL: 'http://api.test',
    APP_URL: 'http://app.test',
    LOG_LEVEL: 'silent',
    // a fixed test key: secrets at rest are sealed in every test run
    SECRETS_KEY: TEST_SECRETS_KEY,
    ...overrides,
  })
}

/** The app on the shared test database (one per test file). */
export function buildTestApp(): Promise<FastifyInstance> {
  if (!cached) {
    // never listens (inject only); the test pool lets the process exit when idle
    cached = buildApp({ config: testConfig(), db: testDb() }).then(instrumentTestApp)
  }
  return cached
}

/**
 * The statements each injected request sends are captured for the routable-statements check, and
 * each response is searched for the secrets requests sent (the run-wide secrets grep).
 */
export async function instrumentTestApp(app: FastifyInstance): Promise<FastifyInstance> {
  await app.ready() // an inject that waits for ready runs in avvio's context, not the caller's
  const inject = app.inject.bind(app) as (...args: unknown[]) => unknown
  // light-my-request dispatches lazily, when its result is awaited: `then` is called inside the scope
  const injectInScope = (...args: unknown[]) =>
    inRequest(() => {
      const options = args[0] as { payload?: unknown; method?: string; url?: string } | undefined
      if (options && typeof options === 'object') rememberSecrets(options.payload)
      const result = inject(...args) as PromiseLike<unknown> | undefined
      return typeof result?.then === 'function'
        ? result.then((response) => refuseSecretEcho(options, response))
        : result
    })
  app.inject = ((...args: unknown[]) => (args.length > 0 ? injectInScope(...args) : inject())) as typeof app.inject
  return app
}

/** The run-wide secrets grep (helpers/secret-echo.ts): a response carrying a secret sent earlier fails its request. */
function refuseSecretEcho(options: { method?: string; url?: string } | undefined, response: unknown): unknown {
  const echoed = echoedSecrets(response as { headers: Record<string, unknown>; body: string })
  if (echoed.length > 0) {
    throw new Error(
      `the response to ${options?.method ?? 'GET'} ${options?.url ?? ''} contains ${echoed.length} secret(s) a request of this test file sent (e.g. "${echoed[0]!.slice(0, 4)}…")`,
    )
  }
  return response
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** `app.inject` with a bearer token. */
export async function call(app: FastifyInstance, token: string | undefined, options: InjectOptions) {
  return app.inject({ ...options, headers: { ...(token ? bearer(token) : {}), ...(options.headers ?? {}) } })
}
