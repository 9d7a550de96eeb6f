/** shapedStatement (platform/db/driver/statement-shapes.ts): compiled once per shape, executed with each call's own values. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { shapedStatement, verifyShapedStatements } from './database.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()

const usersOf = shapedStatement(
  ({ tenant, user }: { tenant: number; user: { ids: number[]; name: string } }, ordered: boolean) => {
    const query = db
      .selectFrom('users as u')
      .select(['u.id', sql<string>`${user.name}::text`.as('label')])
      .where('u.tenant_id', '=', tenant)
      .where(sql<boolean>`u.id = any(${user.ids}::bigint[])`)
    return ordered ? query.orderBy('u.id') : query
  },
)

test('one shape serves every call with its own values: numbers, strings, arrays, one level of objects', async () => {
  const tenant = await given.tenant(db)
  const other = await given.tenant(db)
  const [a, b] = [await given.user(db, tenant), await given.user(db, tenant)]
  const c = await given.user(db, other)
  const run = async (tenantId: number, ids: number[], name: string) =>
    (await db.executeQuery(usersOf({ tenant: tenantId, user: { ids, name } }, true))).rows

  const first = await run(tenant.id, [a.id, b.id, c.id], 'first')
  const second = await run(other.id, [c.id], 'second')
  const none = await run(tenant.id, [], 'none')

  assert.deepEqual(first, [
    { id: a.id, label: 'first' },
    { id: b.id, label: 'first' },
  ])
  assert.deepEqual(second, [{ id: c.id, label: 'second' }])
  assert.deepEqual(none, [])
  const compiled = usersOf({ tenant: 7, user: { ids: [1, 2], name: 'x' } }, true)
  assert.deepEqual(compiled.parameters, ['x', 7, [1, 2]])
  assert.match(compiled.sql, /order by/)
})

test('the shape is derived from every input the builder can decide on: fixed arguments, booleans, sets, array lengths', () => {
  const values = { tenant: 1, user: { ids: [1], name: 'x' } }
  assert.match(usersOf(values, true).sql, /order by/)
  assert.doesNotMatch(usersOf(values, false).sql, /order by/)

  const byFlag = shapedStatement(({ tenant, admin }: { tenant: number; admin: boolean }) =>
    db
      .selectFrom('users')
      .select('id')
      .where('tenant_id', '=', tenant)
      .$if(!admin, (q) => q.where('active', '=', true)),
  )
  assert.match(byFlag({ tenant: 1, admin: false }).sql, /active/)
  assert.doesNotMatch(byFlag({ tenant: 1, admin: true }).sql, /active/)

  const byPermissions = shapedStatement(({ tenant, permissions }: { tenant: number; permissions: Set<string> }) =>
    db
      .selectFrom('users')
      .select('id')
      .where('tenant_id', '=', tenant)
      .$if(!permissions.has('users.view'), (q) => q.where('id', '=', 0)),
  )
  assert.match(byPermissions({ tenant: 1, permissions: new Set() }).sql, /"id" = /)
  assert.doesNotMatch(byPermissions({ tenant: 1, permissions: new Set(['users.view']) }).sql, /"id" = /)

  const inList = shapedStatement(({ ids }: { ids: number[] }) =>
    db.selectFrom('users').select('id').where('id', 'in', ids),
  )
  assert.deepEqual(inList({ ids: [1, 2] }).parameters, [1, 2])
  assert.deepEqual(inList({ ids: [3, 4, 5] }).parameters, [3, 4, 5])
  assert.deepEqual(inList({ ids: [6, 7] }).parameters, [6, 7])
})

test('a builder cannot decide on a value that varies between executions: reading a stand-in throws, tests or not', () => {
  verifyShapedStatements(false)
  const baked = shapedStatement(({ limit }: { limit: number }) =>
    db
      .selectFrom('users')
      .select('id')
      .limit(sql.lit(Number(limit))),
  )
  assert.throws(() => baked({ limit: 5 }), /the builder read a value that varies between executions/)
  const branching = shapedStatement(({ name }: { name: string }) =>
    db
      .selectFrom('users')
      .select('id')
      .$if(`${name}` === 'admin', (q) => q.where('id', '=', 1)),
  )
  assert.throws(() => branching({ name: 'admin' }), /the builder read a value/)
  const serialized = shapedStatement(({ data }: { data: { n: number } }) =>
    db.selectFrom('users').select(sql<string>`${JSON.stringify(data)}::jsonb`.as('d')),
  )
  assert.throws(() => serialized({ data: { n: 1 } }), /the builder read a value/)
})

test('a fixed argument is part of the shape: plain data by content, a mutable object of another kind is refused', () => {
  const byFilter = shapedStatement((_values: Record<string, never>, filter: { column: 'id' | 'tenant_id' }) =>
    db.selectFrom('users').select('id').where(filter.column, '=', 1),
  )
  assert.match(byFilter({}, { column: 'id' }).sql, /where "id"/)
  assert.match(byFilter({}, { column: 'tenant_id' }).sql, /where "tenant_id"/)
  const byMap = shapedStatement((_values: Record<string, never>, columns: Map<string, string>) =>
    db.selectFrom('users').select('id').where('id', '=', columns.size),
  )
  assert.throws(() => byMap({}, new Map()), /cannot be part of a shape/)
})

test("values nested in plain objects at any depth (a rider's columns inside the events' values) are parameters of each call too", async () => {
  const tenant = await given.tenant(db)
  const [a, b] = [await given.user(db, tenant), await given.user(db, tenant)]
  const nested = shapedStatement(
    ({ writes }: { writes: { tenant: number; riders: { along0: { ids: number[]; label: string } } } }) =>
      db
        .selectFrom('users as u')
        .select(['u.id', sql<string>`${writes.riders.along0.label}::text`.as('label')])
        .where('u.tenant_id', '=', writes.tenant)
        .where(sql<boolean>`u.id = any(${writes.riders.along0.ids}::bigint[])`)
        .orderBy('u.id'),
  )
  const run = async (ids: number[], label: string) =>
    (await db.executeQuery(nested({ writes: { tenant: tenant.id, riders: { along0: { ids, label } } } }))).rows

  assert.deepEqual(await run([a.id], 'first'), [{ id: a.id, label: 'first' }])
  assert.deepEqual(await run([a.id, b.id], 'second'), [
    { id: a.id, label: 'second' },
    { id: b.id, label: 'second' },
  ])
})

test('with verification on, a builder reading state outside its inputs is refused instead of running a stale statement', (t) => {
  verifyShapedStatements(true)
  t.after(() => verifyShapedStatements(false))
  let ordered = true
  const fromModuleState = shapedStatement(({ tenant }: { tenant: number }) => {
    const query = db.selectFrom('users').select('id').where('tenant_id', '=', tenant)
    return ordered ? query.orderBy('id') : query
  })
  fromModuleState({ tenant: 1 })
  ordered = false
  assert.throws(() => fromModuleState({ tenant: 2 }), /read an input that is not part of the shape/)
})
