import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { createPool, kyselyOn } from '../../src/platform/db/database.js'
import { testConfig } from './build-test-app.js'
import { tappedPool } from './routable-statements.js'
import { testDatabaseUrl } from './test-database.js'
import { onCitusCluster, SINGLE_SHARD_SETTINGS } from './citus.js'

export interface WatchedApp {
  app: FastifyInstance
  /** Runs `request` and returns its result with the text of every statement the app sent meanwhile. */
  watch: <T>(request: () => Promise<T>) => Promise<{ result: T; statements: string[] }>
}

/** An app on a pool of its own whose statements are watched (requests one at a time). */
export async function watchedApp(): Promise<WatchedApp> {
  const sent: string[] = []
  const pool = createPool(testDatabaseUrl(), {
    max: 2,
    allowExitOnIdle: true,
    genericPlans: !onCitusCluster,
    settings: SINGLE_SHARD_SETTINGS,
  })
  const app = await buildApp({ config: testConfig(), db: kyselyOn(tappedPool(pool, (text) => sent.push(text))) })
  return {
    app,
    async watch(request) {
      sent.length = 0
      const result = await request()
      return { result, statements: [...sent] }
    },
  }
}

/** The writing statements among `statements`. */
export const writes = (statements: string[]) =>
  statements.filter(
    // the session-use timer (platform/auth/session-activity.ts) may write in the middle of a watched request: not the request's
    (text) => /\b(insert\s+into|update|delete\s+from)\b/i.test(text) && !/^insert into session_activity\b/.test(text),
  )
/** The transactions begun among `statements`. */
export const transactions = (statements: string[]) => statements.filter((text) => /^\s*begin\b/i.test(text))
