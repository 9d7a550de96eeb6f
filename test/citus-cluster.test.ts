/**
 * The cluster's own checks of `npm run test:citus` (docs/citus.md): how `workplace db distribute`
 * placed the tables, that tenants spread over both workers, and that the guard the suite runs with
 * holds (a statement sent to more than one shard fails on the API's connections, not on the
 * maintenance ones). Nothing to check on a single PostgreSQL: skipped there.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { createPool, kyselyOn, openDatabase } from '../src/platform/db/database.js'
import { TABLE_CLASSES } from '../src/platform/db/table-classes.js'
import { onCitusCluster, requestGuardedPool } from './helpers/citus.js'
import { given } from './helpers/given.js'
import { testDatabaseUrl, testDb } from './helpers/test-database.js'

const skip = onCitusCluster ? false : 'a single PostgreSQL: the Citus cluster checks run in npm run test:citus'
const db = testDb()

test(
  'every table is placed by its class: tenant tables distributed by tenant_id and colocated, global ones replicated',
  { skip },
  async () => {
    const { rows } = await sql<{ table: string; method: string; column: string | null; colocation: number }>`
    select logicalrelid::regclass::text as table, partmethod::text as method,
      case when partmethod = 'h' then column_to_column_name(logicalrelid, partkey) end as column, colocationid as colocation
    from pg_dist_partition`.execute(db)
    const placed = new Map(rows.map((r) => [r.table, r]))
    const colocations = new Set<number>()
    for (const [table, kind] of Object.entries(TABLE_CLASSES)) {
      const row = placed.get(table)
      if (kind === 'tenant') {
        assert.equal(row?.method, 'h', `${table} is hash-distributed`)
        assert.equal(row?.column, 'tenant_id', `${table} is distributed by tenant_id`)
        colocations.add(row!.colocation)
      } else if (kind === 'global') assert.equal(row?.method, 'n', `${table} is a reference table`)
      else assert.ok(!row || row.method === 'n', `${table} stays on the coordinator`)
    }
    assert.equal(colocations.size, 1, 'all tenant tables in one colocation group')
  },
)

test('tenants spread over both workers, each tenant on one of them', { skip }, async () => {
  const tenants = await Promise.all(Array.from({ length: 12 }, () => given.tenant(db)))
  const { rows } = await sql<{ tenant: string; node: string }>`
    select t.id as tenant, n.nodename || ':' || n.nodeport as node
    from unnest(${tenants.map((t) => t.id)}::bigint[]) t(id)
    join pg_dist_placement p on p.shardid = get_shard_id_for_distribution_column('users', t.id)
    join pg_dist_node n on n.groupid = p.groupid`.execute(db)
  assert.equal(rows.length, tenants.length, 'one placement per tenant')
  assert.equal(new Set(rows.map((r) => r.node)).size, 2, JSON.stringify(rows))
  const { rows: workers } = await sql<{ count: number }>`
    select count(*)::int as count from pg_dist_node where groupid <> 0 and noderole = 'primary'`.execute(db)
  assert.equal(workers[0]!.count, 2)
})

test(
  'the API connections refuse a statement sent to every shard; maintenance connections run it',
  { skip },
  async () => {
    const tenant = await given.tenant(db)
    // one tenant: routed to one shard, fine
    await sql`select count(*) from users where tenant_id = ${tenant.id}`.execute(db)
    // a connection checked out as for a request of the test app (the shared pool decides by the
    // request scope; a pool of its own here, so that the routable-statements check does not capture it)
    const guardedPool = createPool(testDatabaseUrl(), { max: 1, allowExitOnIdle: true })
    try {
      const guarded = kyselyOn(requestGuardedPool(guardedPool, () => true))
      await assert.rejects(sql`select count(*) from users`.execute(guarded), /multi-task query about to be executed/)
      await guarded.destroy()
    } finally {
      await guardedPool.end().catch(() => undefined)
    }
    // the request pool of `workplace serve` with CITUS_MULTI_SHARD_LOG_LEVEL=error (test:citus sets it)
    const served = await openDatabase({
      url: testDatabaseUrl(),
      dataDir: '',
      poolSize: 1,
      citusSettings: { 'citus.multi_task_query_log_level': 'error' },
    })
    try {
      const { rows: level } = await sql<{
        level: string
      }>`select current_setting('citus.multi_task_query_log_level') as level`.execute(served.db)
      assert.equal(level[0]!.level, 'error')
    } finally {
      await served.close()
    }
    // the test's own statements (set-up, checks) run without the guard
    await sql`select count(*) from users`.execute(db)
    const maintenance = createPool(testDatabaseUrl(), { max: 1, allowExitOnIdle: true, name: 'jobs' })
    try {
      const { rows } = await sql<{ count: number }>`select count(*)::int as count from users`.execute(
        kyselyOn(maintenance),
      )
      assert.ok(rows[0]!.count >= 1)
    } finally {
      await maintenance.end()
    }
  },
)
