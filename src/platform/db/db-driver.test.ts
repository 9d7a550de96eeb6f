/** The database driver layer (platform/db/driver/, through platform/db/database.ts) under connection failures. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { testDatabaseUrl, testDb } from '../../../test/helpers/test-database.js'

const db = testDb()

test(
  'a streamed query whose connection is terminated mid-stream fails instead of hanging',
  { timeout: 20_000 },
  async () => {
    const rows = (db as any)
      .selectFrom(sql`generate_series(1, 100000)`.as('g'))
      .select([sql<number>`pg_backend_pid()`.as('pid'), 'g'])
      .stream(10) as AsyncIterable<{ pid: number }>
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
  },
)

test('a streamed query is prepared once per connection and reused, in session mode only', async () => {
  const { createPool, kyselyOn } = await import('./database.js')
  for (const mode of ['session', 'transaction'] as const) {
    const pool = createPool(testDatabaseUrl(), { max: 1, poolMode: mode })
    const single = kyselyOn(pool, mode)
    try {
      const streamed = async (limit: number) => {
        const rows: number[] = []

        for await (const row of (single as any)
          .selectFrom(sql`generate_series(1, ${limit})`.as('g'))
          .select('g')
          .stream(2) as AsyncIterable<{ g: number }>)
          rows.push(row.g)
        return rows
      }
      assert.deepEqual(await streamed(5), [1, 2, 3, 4, 5])
      assert.deepEqual(await streamed(3), [1, 2, 3], 'the same statement again, other parameters')
      const { rows } = await sql<{
        n: number
      }>`select count(*)::int as n from pg_prepared_statements where statement like '%generate_series%' and statement not like '%pg_prepared_statements%'`.execute(
        single,
      )
      assert.equal(rows[0]!.n, mode === 'session' ? 1 : 0, mode)
    } finally {
      await single.destroy()
    }
  }
})

test('executeCompiled runs a compiled statement as a named statement of the pool in session mode, and inside a transaction on its connection', async () => {
  const { createPool, executeCompiled, kyselyOn } = await import('./database.js')
  for (const mode of ['session', 'transaction'] as const) {
    const pool = createPool(testDatabaseUrl(), { max: 1, poolMode: mode })
    const own = kyselyOn(pool, mode)
    try {
      const count = sql<{
        n: number
        label: string
      }>`select /* compiled-probe */ count(*)::int as n, ${'executeCompiled probe'}::text as label from pg_class where relname = ${'pg_class'}`.compile(
        own,
      )
      assert.deepEqual(await executeCompiled(own, count), [{ n: 1, label: 'executeCompiled probe' }])
      assert.deepEqual(
        await executeCompiled(own, count),
        [{ n: 1, label: 'executeCompiled probe' }],
        'again, on the prepared statement',
      )
      const { rows } = await sql<{
        n: number
      }>`select count(*)::int as n from pg_prepared_statements where statement like '%compiled-probe%' and statement not like '%pg_prepared_statements%'`.execute(
        own,
      )
      assert.equal(rows[0]!.n, mode === 'session' ? 1 : 0, `${mode}: named (prepared) in session mode only`)
      // a transaction's own state is seen only on the transaction's connection: executeCompiled must run there
      const seen = await own.transaction().execute(async (trx) => {
        const marker = `probe-${mode}-${Date.now()}`
        await sql`select set_config('app.probe', ${marker}, true)`.execute(trx)
        const [inside] = await executeCompiled(
          trx,
          sql<{ value: string }>`select current_setting('app.probe', true) as value`.compile(trx),
        )
        return { marker, inside: inside!.value }
      })
      assert.equal(seen.inside, seen.marker, `${mode}: the transaction's setting is seen inside it`)
    } finally {
      await own.destroy()
    }
  }
})
