import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { buildApp } from '../../app.js'
import { syncClockColumns } from '../../platform/sync/change-log.js'
import { testConfig } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { privateTestDatabase } from '../../../test/helpers/test-database.js'
import { syncRequest } from '../../../test/helpers/sync-client.js'

const BURST = 20_000

// A database of its own: where the probes start depends on the transactions running in the whole database,
// and the other test files' would hold it back.
test("after a burst is numbered, an idle sync's probe starts past it (no walk over its dead index entries)", async () => {
  const database = await privateTestDatabase('pending_probe')
  const app = await buildApp({ config: testConfig({ AUTH_CACHE: 'false' }), db: database.db })
  try {
    const tenant = await given.tenant(database.db)
    const sync = async (cursor?: string) => {
      const res = await syncRequest(app, tenant.adminToken, { cursor, device: 'phone' })
      assert.equal(res.statusCode, 200, res.body)
      return res.json<{ changes: unknown[]; cursor: string }>()
    }
    const { cursor } = await sync()
    // a burst of writes leaves its records pending (entities no source reads: the sync only numbers them),
    // each at its own time, as separate transactions write them
    await sql`insert into sync_changes (tenant_id, entity, entity_id, version, changed_at)
      select ${tenant.id}, 'burst', g::text, null, clock_timestamp() from generate_series(1, ${BURST}::int) g`.execute(
      database.db,
    )
    const numbered = await sync(cursor)
    const clock = await database.db
      .selectFrom('sync_clocks')
      .select(['version', 'pending_from'])
      .where('tenant_id', '=', tenant.id)
      .executeTakeFirstOrThrow()
    assert.ok(Number(clock.version) >= BURST, `the sync numbered the burst: ${JSON.stringify(clock)}`)
    assert.ok(clock.pending_from, 'the numbering says where the pending records can start')

    /** Index pages an idle sync's statement reads: 12 past the burst, 77–88 over its dead entries. */
    const pagesRead = async () => {
      const { rows } = await sql<{ 'QUERY PLAN': Array<{ Plan: Record<string, number> }> }>`
        explain (analyze, buffers, format json) select ${syncClockColumns(tenant.id)}`.execute(database.db)
      const plan = rows[0]!['QUERY PLAN'][0]!.Plan
      return plan['Shared Hit Blocks']! + plan['Shared Read Blocks']!
    }
    await pagesRead() // the first probe after a numbering may still visit the rows it numbered
    const pages = await pagesRead()
    assert.ok(pages < 20, `an idle probe reads ${pages} pages`)

    // a record written afterwards is found, and comes with the next sync
    await sql`insert into sync_changes (tenant_id, entity, entity_id, version)
      values (${tenant.id}, 'burst', 'late', null)`.execute(database.db)
    const next = await sync(numbered.cursor)
    const after = await database.db
      .selectFrom('sync_clocks')
      .select('version')
      .where('tenant_id', '=', tenant.id)
      .executeTakeFirstOrThrow()
    assert.equal(Number(after.version), Number(clock.version) + 1, 'the late record numbered')
    assert.notEqual(next.cursor, numbered.cursor)
  } finally {
    await app.close()
    await database.close()
  }
})
