/** The database driver layer (platform/db/database.ts) under connection failures. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { testDatabaseUrl, testDb } from './helpers/test-database.js'

const db = testDb()

test('a streamed query whose connection is terminated mid-stream fails instead of hanging', { timeout: 20_000 }, async () => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a raw FROM item
  const rows = (db as any).selectFrom(sql`generate_series(1, 100000)`.as('g')).select([sql<number>`pg_backend_pid()`.as('pid'), 'g']).stream(10) as AsyncIterable<{ pid: number }>
  const killer = new pg.Client({ connectionString: testDatabaseUrl() })
  await killer.connect()
  let read = 0
  let failure: unknown
  try {
    for await (const row of rows) {
      if (read++ === 0) await killer.query('select pg_terminate_backend($1::int)', [row.pid])
    }
  } catch (error) {
    failure = error
  } finally {
    await killer.end()
  }

  assert.ok(failure instanceof Error, 'the stream ends with the connection error')
  assert.ok(read < 100_000, `stopped after ${read} rows`)
  const after = await sql<{ ok: number }>`select 1 as ok`.execute(db)
  assert.equal(after.rows[0].ok, 1, 'the pool serves again')
})
