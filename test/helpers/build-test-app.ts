import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import { testDb } from './test-database.js'

let cached: Promise<FastifyInstance> | undefined

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: process.env.TEST_DB_URL,
    STORAGE_DIR: process.env.TEST_STORAGE_DIR,
    BASE_URL: 'http://api.test',
    APP_URL: 'http://app.test',
    LOG_LEVEL: 'silent',
    ...overrides,
  })
}

/** The app on the shared test database (one per test file). */
export function buildTestApp(): Promise<FastifyInstance> {
  if (!cached) {
    // never listens (inject only); the test pool lets the process exit when idle
    cached = buildApp({ config: testConfig(), db: testDb() })
  }
  return cached
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** `app.inject` with a bearer token. */
export async function call(app: FastifyInstance, token: string | undefined, options: InjectOptions) {
  return app.inject({ ...options, headers: { ...(token ? bearer(token) : {}), ...(options.headers ?? {}) } })
}
