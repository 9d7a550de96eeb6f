/** shapedStatement (platform/db/statement-shapes.ts): compiled once per shape, executed with each call's own values. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { shapedStatement, verifyShapedStatements } from '../src/platform/db/statement-shapes.js'
import { given } from './helpers/given.js'
import { testDb } from './helpers/test-database.js'

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
    (await db.executeQuery(usersOf('ordered', { tenant: tenantId, user: { ids, name } }, true))).rows

  const first = await run(tenant.id, [a.id, b.id, c.id], 'first')
  const second = await run(other.id, [c.id], 'second')
  const none = await run(tenant.id, [], 'none')

  assert.deepEqual(first, [
    { id: a.id, label: 'first' },
    { id: b.id, label: 'first' },
  ])
  assert.deepEqual(second, [{ id: c.id, label: 'second' }])
  assert.deepEqual(none, [])
  const compiled = usersOf('ordered', { tenant: 7, user: { ids: [1, 2], name: 'x' } }, true)
  assert.deepEqual(compiled.parameters, ['x', 7, [1, 2]])
  assert.match(compiled.sql, /order by/)
})

test('with verification on, a decision missing from the shape key is refused instead of running the wrong statement', async (t) => {
  verifyShapedStatements(true)
  t.after(() => verifyShapedStatements(false))
  const values = { tenant: 1, user: { ids: [1], name: 'x' } }
  usersOf('same key', values, true)

  assert.throws(() => usersOf('same key', values, false), /a decision of the builder is missing from the shape key/)
  assert.doesNotThrow(() => usersOf('other key', values, false))
})

test('a value baked into the text instead of passed as a parameter is caught by verification', async (t) => {
  verifyShapedStatements(true)
  t.after(() => verifyShapedStatements(false))
  const baked = shapedStatement(({ limit }: { limit: number }) =>
    db
      .selectFrom('users')
      .select('id')
      .limit(sql.lit(Number(limit))),
  )
  baked('', { limit: 5 })

  assert.throws(() => baked('', { limit: 6 }), /missing from the shape key/)
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
    (await db.executeQuery(nested('', { writes: { tenant: tenant.id, riders: { along0: { ids, label } } } }))).rows

  assert.deepEqual(await run([a.id], 'first'), [{ id: a.id, label: 'first' }])
  assert.deepEqual(await run([a.id, b.id], 'second'), [
    { id: a.id, label: 'second' },
    { id: b.id, label: 'second' },
  ])
})
