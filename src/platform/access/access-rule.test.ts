import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { grantAllows, hasGrantAccess, type Grantee } from './access-rule.js'

const db = testDb()
const TARGET = 'folder'

/** The rule applied to a set of target ids in ONE statement, as list endpoints do. */
async function visibleTargets(grantee: Grantee, key: string, ids: number[]): Promise<number[]> {
  const { rows } = await sql<{ id: number }>`
    select t.id from unnest(${ids}::bigint[]) as t(id)
    where ${grantAllows(grantee, key, TARGET, sql.ref('t.id'))}
    order by t.id`.execute(db)
  return rows.map((r) => Number(r.id))
}

test('the access rule: restricted-if-granted, grantee by user, role or department', async (t) => {
  const tenant = await given.tenant(db)
  const roleA = await given.role(db, tenant, ['users.view'])
  const roleB = await given.role(db, tenant, ['users.view'])
  const alice = await given.user(db, tenant, { roleId: roleA })
  const bob = await given.user(db, tenant, { roleId: roleB })
  const sales = await given.department(db, tenant, [alice.id])
  const grantee = (user: { id: number }, roleId: number, departmentIds: number[]): Grantee => ({
    tenantId: tenant.id,
    userId: user.id,
    roleId,
    departmentIds,
  })
  const aliceG = grantee(alice, roleA, [sales])
  const bobG = grantee(bob, roleB, [])

  // target ids are arbitrary: the rule is about grants, not about any table
  const [open, userGranted, roleGranted, deptGranted, otherKey] = [910001, 910002, 910003, 910004, 910005]
  await given.grant(db, tenant, { key: 'view', to: ['user', alice.id], on: [TARGET, userGranted] })
  await given.grant(db, tenant, { key: 'view', to: ['role', roleA], on: [TARGET, roleGranted] })
  await given.grant(db, tenant, { key: 'view', to: ['department', sales], on: [TARGET, deptGranted] })
  await given.grant(db, tenant, { key: 'administrate', to: ['user', bob.id], on: [TARGET, otherKey] })
  const all = [open, userGranted, roleGranted, deptGranted, otherKey]

  const cases: Array<[string, Grantee, number, boolean]> = [
    ['no grants: unrestricted', bobG, open, true],
    ['user grant, user matches', aliceG, userGranted, true],
    ['user grant, user does not match', bobG, userGranted, false],
    ['role grant, role matches', aliceG, roleGranted, true],
    ['role grant, role does not match', bobG, roleGranted, false],
    ['department grant, member', aliceG, deptGranted, true],
    ['department grant, not a member', bobG, deptGranted, false],
    ['grant for another key does not restrict view', aliceG, otherKey, true],
  ]
  for (const [name, who, target, expected] of cases) {
    await t.test(name, async () => {
      assert.equal(await hasGrantAccess(db, who, 'view', TARGET, target), expected)
      assert.equal((await visibleTargets(who, 'view', all)).includes(target), expected)
    })
  }

  await t.test('the other key is restricted to its own grantees', async () => {
    assert.equal(await hasGrantAccess(db, bobG, 'administrate', TARGET, otherKey), true)
    assert.equal(await hasGrantAccess(db, aliceG, 'administrate', TARGET, otherKey), false)
  })

  await t.test('administrators bypass restriction grants', async () => {
    const admin = { ...bobG, isAdmin: true }
    assert.deepEqual(await visibleTargets(admin, 'view', all), all)
  })

  await t.test('grants of another tenant never restrict or admit', async () => {
    const other = await given.tenant(db)
    const stranger = await given.user(db, other)
    await given.grant(db, other, { key: 'view', to: ['user', stranger.id], on: [TARGET, open] })
    assert.equal(await hasGrantAccess(db, bobG, 'view', TARGET, open), true, 'a foreign grant does not restrict')
    const strangerG: Grantee = { tenantId: other.id, userId: stranger.id, roleId: stranger.roleId, departmentIds: [] }
    assert.equal(
      await hasGrantAccess(db, { ...strangerG, userId: alice.id }, 'view', TARGET, userGranted),
      true,
      'in the other tenant the target carries no grant, so it is unrestricted there',
    )
  })

  await t.test('removing the last grant restores open access immediately', async () => {
    await db
      .deleteFrom('entity_permissions')
      .where('tenant_id', '=', tenant.id)
      .where('target_entity_id', '=', String(userGranted))
      .execute()
    assert.equal(await hasGrantAccess(db, bobG, 'view', TARGET, userGranted), true)
  })
})

test('uuid targets work with the same rule', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const other = await given.user(db, tenant)
  const uuid = '6f1c2a52-8d8e-4f39-9d3f-7c3b9f0e2a11'
  await given.grant(db, tenant, { key: 'view', to: ['user', user.id], on: ['sharedItem', uuid] })

  const mine = await hasGrantAccess(
    db,
    { tenantId: tenant.id, userId: user.id, roleId: user.roleId, departmentIds: [] },
    'view',
    'sharedItem',
    uuid,
  )
  const theirs = await hasGrantAccess(
    db,
    { tenantId: tenant.id, userId: other.id, roleId: other.roleId, departmentIds: [] },
    'view',
    'sharedItem',
    uuid,
  )

  assert.equal(mine, true)
  assert.equal(theirs, false)
})
