/** DATABASE_POOL_MODE=transaction: what may reach a transaction-mode pooler, and what the app still relies on. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { loadConfig } from '../../config.js'
import { applyDatabaseDefaults, createPool, kyselyOn, openDatabase, verifySessionSettings } from './database.js'
import { privateTestDatabase, testDatabaseUrl } from '../../../test/helpers/test-database.js'
import { onCitusCluster } from '../../../test/helpers/citus.js'

test('transaction mode sends no startup options and prepares no named statements; session mode does both', async (t) => {
  const database = await privateTestDatabase('poolmode')
  t.after(() => database.close())
  const probe = async (mode: 'session' | 'transaction') => {
    const pool = createPool(database.url, { max: 1, poolMode: mode })
    const db = kyselyOn(pool, mode)
    try {
      for (let i = 0; i < 3; i++) await db.selectFrom('tenants').select('id').where('id', '=', i).execute()
      const {
        rows: [row],
      } = await sql<{ prepared: number; jit: string; tz: string }>`
        select (select count(*)::int from pg_prepared_statements) as prepared, current_setting('jit') as jit, current_setting('TimeZone') as tz`.execute(
        db,
      )
      return row
    } finally {
      await db.destroy()
    }
  }
  const session = await probe('session')
  assert.ok(session.prepared > 0, 'session mode names (prepares) its statements')
  assert.deepEqual([session.jit, session.tz], ['off', 'UTC'], 'session mode sets them as startup options')

  // a fresh database: the server defaults (jit on; the cluster's time zone unless it is UTC)
  const bare = await probe('transaction')
  assert.equal(bare.prepared, 0, 'transaction mode prepares nothing a pooler could route elsewhere')
  assert.equal(bare.jit, 'on', 'no startup options in transaction mode')
  const checkPool = createPool(database.url, { max: 1, poolMode: 'transaction' })
  await assert.rejects(verifySessionSettings(checkPool), /jit=off/, 'a node refuses to start without the settings')
  await checkPool.end()

  // `workplace migrate` makes them the role's defaults in this database: new server connections have them
  const admin = createPool(database.url, { max: 1 })
  await applyDatabaseDefaults(admin)
  await admin.end()
  const configured = await probe('transaction')
  assert.deepEqual([configured.prepared, configured.jit, configured.tz], [0, 'off', 'UTC'])
  const verified = createPool(database.url, { max: 1, poolMode: 'transaction' })
  await verifySessionSettings(verified)
  await verified.end()
})

test('DATABASE_POOL_MODE is session or transaction; transaction needs DATABASE_URL; DATABASE_DIRECT_URL defaults to DATABASE_URL', () => {
  assert.throws(
    () => loadConfig({ DATABASE_POOL_MODE: 'statement', DATABASE_URL: 'postgres://x/y' }),
    /DATABASE_POOL_MODE must be session or transaction/,
  )
  assert.throws(() => loadConfig({ DATABASE_POOL_MODE: 'transaction' }), /needs DATABASE_URL/)
  const config = loadConfig({ DATABASE_URL: 'postgres://pooler/db', DATABASE_POOL_MODE: 'transaction' })
  assert.deepEqual([config.db.poolMode, config.db.directUrl], ['transaction', 'postgres://pooler/db'])
  assert.equal(
    loadConfig({ DATABASE_URL: 'postgres://pooler/db', DATABASE_DIRECT_URL: 'postgres://db/db' }).db.directUrl,
    'postgres://db/db',
  )
})

test('the app plans each named statement once per connection, without its values, also where PostgreSQL would replan it every time', async () => {
  // `limit $1` and `= any($2)`: left to itself PostgreSQL plans this anew on every execution (the plan for
  // the values always looks cheaper than one for unknown values)
  const handle = await openDatabase({ url: testDatabaseUrl(), dataDir: '', poolSize: 1 })
  try {
    for (let i = 0; i < 8; i++)
      await handle.db
        .selectFrom('tenants')
        .select('id')
        .where(sql<boolean>`"id" = any(${[1, 2, i]}::bigint[])`)
        .orderBy('id')
        .limit(i + 1)
        .execute()
    const { rows } = await sql<{ generic_plans: number; custom_plans: number }>`
      select generic_plans::int, custom_plans::int from pg_prepared_statements where statement like '%from "tenants" where "id" = any%' and statement not like '%pg_prepared_statements%'`.execute(
      handle.db,
    )
    assert.equal(rows.length, 1, 'the statement is prepared (named) once')
    if (onCitusCluster) {
      // the other form: Citus cannot plan some generic plans (docs/citus.md, "Two forms"), so on a
      // coordinator the pool leaves the choice to PostgreSQL and Citus, which plan the first
      // executions for their values
      const { rows: mode } = await sql<{ plan_cache_mode: string }>`show plan_cache_mode`.execute(handle.db)
      assert.equal(mode[0]!.plan_cache_mode, 'auto')
      assert.ok(rows[0].custom_plans > 0, 'executions planned for their values')
    } else
      assert.deepEqual(
        [rows[0].custom_plans, rows[0].generic_plans > 0],
        [0, true],
        'no execution was planned for its values',
      )
  } finally {
    await handle.close()
  }
})
