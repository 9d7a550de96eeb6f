import { createPool, kyselyOn } from '../../src/platform/db/database.js'
import type { Db } from '../../src/platform/db/schema.js'

let shared: { db: Db; pool: ReturnType<typeof createPool> } | undefined

export function testDatabaseUrl(): string {
  const url = process.env.TEST_DB_URL
  if (!url) throw new Error('TEST_DB_URL is not set: run the tests with `npm test` (test/run-tests.ts prepares the database)')
  return url
}

/** One pool per test process, on the migrated test database. */
export function testDb(): Db {
  if (!shared) {
    const pool = createPool(testDatabaseUrl(), { max: 10, allowExitOnIdle: true })
    shared = { pool, db: kyselyOn(pool) }
  }
  return shared.db
}

export async function closeTestDb(): Promise<void> {
  if (shared) await shared.db.destroy()
  shared = undefined
}
