import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { buildTestApp, call } from './helpers/build-test-app.js'
import { given } from './helpers/given.js'
import { testDb } from './helpers/test-database.js'

const db = testDb()
const app = await buildTestApp()

/** One random world: roles, departments, users, a folder tree and view grants on its folders. */
const world = fc.record({
  rolePermissions: fc.array(fc.constantFrom<string[]>([], ['forms.view'], ['*']), { minLength: 2, maxLength: 2 }),
  users: fc.array(fc.record({ role: fc.nat(1), departments: fc.subarray([0, 1]) }), { minLength: 3, maxLength: 3 }),
  // parent of folder i: null or an earlier folder
  parents: fc.array(fc.nat(10), { minLength: 2, maxLength: 6 }).map((raw) => raw.map((p, i) => (i === 0 || p % (i + 1) === i ? null : p % i))),
  grants: fc.array(fc.record({ folder: fc.nat(5), to: fc.constantFrom('user', 'role', 'department'), index: fc.nat(2) }), { maxLength: 6 }),
})

test('explain.allowed equals "the folder list returns it" for every user × folder (fast-check)', async () => {
  const tenant = await given.tenant(db)
  let comparisons = 0
  await fc.assert(fc.asyncProperty(world, async (w) => {
    const roles = await Promise.all(w.rolePermissions.map((p) => given.role(db, tenant, p)))
    const departments = await Promise.all([0, 1].map(() => given.department(db, tenant)))
    const users = await Promise.all(w.users.map((u) => given.user(db, tenant, { roleId: roles[u.role]!, departmentIds: u.departments.map((d) => departments[d]!) })))
    const folders: number[] = []
    for (const parent of w.parents) {
      const res = await call(app, tenant.adminToken, { method: 'POST', url: '/api/folders', payload: { type: 'form', name: `f${folders.length}`, parent_id: parent === null ? null : folders[parent] } })
      assert.equal(res.statusCode, 201, res.body)
      folders.push(res.json().id)
    }
    for (const g of w.grants) {
      const folder = folders[g.folder % folders.length]!
      const to = g.to === 'user' ? users[g.index % users.length]!.id : g.to === 'role' ? roles[g.index % roles.length]! : departments[g.index % departments.length]!
      await db.insertInto('entity_permissions').values({ tenant_id: tenant.id, key: 'view', permission_entity: g.to, permission_entity_id: to, target_entity: 'folder', target_entity_id: String(folder) })
        .onConflict((oc) => oc.doNothing()).execute()
    }
    for (const user of users) {
      const listed = await call(app, user.token, { method: 'GET', url: `/api/folders?filter[id][in]=${folders.join(',')}&selects=id` })
      const visible = listed.statusCode === 200 ? new Set((listed.json() as Array<{ id: number }>).map((f) => f.id)) : new Set<number>()
      for (const folder of folders) {
        const res = await call(app, tenant.adminToken, { method: 'GET', url: `/api/administration/access/explain?user_id=${user.id}&target_entity=folder&target_entity_id=${folder}&key=view` })
        assert.equal(res.statusCode, 200, res.body)
        const explanation = res.json()
        assert.equal(explanation.allowed, visible.has(folder), `user ${user.id} folder ${folder}: ${res.body}`)
        assert.equal(explanation.path.at(-1), folder)
        if (explanation.allowed) assert.ok(['admin_bypass', 'unrestricted', 'direct_grant', 'inherited_grant'].includes(explanation.reason))
        else assert.ok(['module_permission_missing', 'no_matching_grant'].includes(explanation.reason))
        comparisons++
      }
    }
  }), { numRuns: 60 })
  assert.ok(comparisons >= 500, `at least 500 user × target cases (${comparisons})`)
})

test('explain reasons: inherited grant names the folder that carries it; why a grant does not match', async () => {
  const tenant = await given.tenant(db)
  const role = await given.role(db, tenant, ['forms.view'])
  const anna = await given.user(db, tenant, { roleId: role })
  const other = await given.user(db, tenant, { roleId: role })
  const post = async (payload: object) => (await call(app, tenant.adminToken, { method: 'POST', url: '/api/folders', payload })).json().id as number
  const root = await post({ type: 'form', name: 'root' })
  const child = await post({ type: 'form', name: 'child', parent_id: root })
  await given.grant(db, tenant, { key: 'view', to: ['user', anna.id], on: ['folder', root] })
  const explain = async (userId: number, id: number) => (await call(app, tenant.adminToken, { method: 'GET', url: `/api/administration/access/explain?user_id=${userId}&target_entity=folder&target_entity_id=${id}` })).json()
  const forAnna = await explain(anna.id, child)
  assert.deepEqual([forAnna.allowed, forAnna.reason, forAnna.folder_id, forAnna.path], [true, 'inherited_grant', root, [root, child]])
  const forOther = await explain(other.id, child)
  assert.deepEqual([forOther.allowed, forOther.reason, forOther.folder_id], [false, 'no_matching_grant', root])
  assert.deepEqual(forOther.grants.map((g: any) => [g.matches, g.why]), [[false, 'another user']])
  const employee = await given.user(db, tenant)
  assert.equal((await call(app, employee.token, { method: 'GET', url: `/api/administration/access/explain?user_id=${anna.id}&target_entity=folder&target_entity_id=${root}` })).statusCode, 403)
})
