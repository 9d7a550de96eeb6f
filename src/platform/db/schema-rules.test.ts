import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { sql } from 'kysely'
import { distributeCommand, distributionPlan } from './distribute.js'
import { catalogTables, schemaRuleViolations } from './schema-rules.js'
import { privateTestDatabase } from '../../../test/helpers/test-database.js'
import { onCitusCluster } from '../../../test/helpers/citus.js'

// a database of its own, migrated (and on Citus distributed) for this file: the shared test database
// also holds what test helpers create beside the migrated schema (the share targets of shared items)
let database: Awaited<ReturnType<typeof privateTestDatabase>>
before(async () => {
  database = await privateTestDatabase('schemarules')
})
after(() => database.close())
const testDb = () => database.db

// docs/citus.md: what Citus needs to distribute every tenant table by tenant_id
test('the migrated schema follows the rules of distribution by tenant', async () => {
  assert.deepEqual(await schemaRuleViolations(testDb()), [])
})

test('the distribution plan covers every table of the migrated schema; without Citus distributing exits 1', async () => {
  const db = testDb()
  const plan = await distributionPlan(db)
  const tables = await catalogTables(db)
  assert.deepEqual(
    plan.steps.map((s) => s.table).sort(),
    tables.map((t) => (t.schema === 'public' ? t.table : `${t.schema}.${t.table}`)).sort(),
  )
  assert.equal(plan.steps.filter((s) => s.kind === 'unclassified').length, 0)
  const byTable = new Map(plan.steps.map((s) => [s.table, s]))
  if (onCitusCluster) {
    // test:citus distributed the database before the suite (workplace db distribute): nothing is left to place
    assert.deepEqual(
      plan.steps.filter((s) => s.action !== 'none').map((s) => s.table),
      [],
    )
  } else {
    assert.equal(byTable.get('tenants')?.action, 'reference')
    assert.equal(byTable.get('users')?.action, 'distribute')
    assert.match(
      byTable.get('users')?.statement ?? '',
      /create_distributed_table\('users', 'tenant_id', colocate_with => '\w+'\)/,
    )
  }
  assert.equal(byTable.get('graphile_worker._private_jobs')?.kind, 'local')
  // referenced tenant tables are distributed before the tables referencing them
  const order = plan.steps.map((s) => s.table)
  assert.ok(order.indexOf('users') < order.indexOf('access_tokens') && order.indexOf('roles') < order.indexOf('users'))
  // on Citus two tenant tables linked by a foreign key cannot be distributed one after the other (seen on
  // a coordinator + 2 workers: "foreign keys from reference tables and local tables to distributed tables
  // are not supported"): such keys are dropped and added again around one transaction
  if (plan.steps.some((s) => s.kind === 'tenant' && s.action === 'distribute')) {
    const held = plan.heldForeignKeys.map((fk) => `${fk.table}.${fk.constraint}`)
    assert.ok(held.includes('users.users_tenant_id_role_id_fkey'), held.join(', '))
    assert.ok(held.includes('access_tokens.access_tokens_tenant_id_user_id_fkey'), held.join(', '))
    assert.ok(
      !held.includes('folders.folders_tenant_id_parent_id_fkey'),
      'a self-reference is distributed with its table',
    )
    assert.deepEqual(
      plan.heldForeignKeys.filter((fk) => /REFERENCES (tenants|languages)\(/.test(fk.definition)),
      [],
      'keys to reference tables stay',
    )
  }

  let output = ''
  assert.equal(await distributeCommand(db, { dryRun: false }, (text) => (output += text)), plan.citus ? 0 : 1)
  if (!plan.citus) assert.match(output, /citus extension is not installed/)
  if (onCitusCluster) assert.match(output, /already placed: nothing to do/)
})

test('a trigger on a tenant table breaks the rules (on Citus it would run on a worker)', async () => {
  const violations = await testDb()
    .transaction()
    .execute(async (trx) => {
      await sql`create function schema_rules_probe() returns trigger language plpgsql as $$ begin return null; end $$`.execute(
        trx,
      )
      await sql`create trigger schema_rules_probe after update on roles for each statement execute function schema_rules_probe()`.execute(
        trx,
      )
      const found = await schemaRuleViolations(trx)
      throw Object.assign(new Error('rolled back'), { found })
    })
    .catch((error: { found?: string[]; message?: string }) => error.found ?? error.message)
  // on a distributed database Citus refuses the trigger at once (docs/citus.md)
  if (onCitusCluster) return assert.match(String(violations), /triggers are not supported on distributed tables/)
  assert.deepEqual(violations, [
    'roles: trigger schema_rules_probe on a tenant table (send notices from the app: db/change-notices.ts)',
  ])
})
