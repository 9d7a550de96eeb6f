import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()
const app = await buildTestApp()

const ALLOWING = ['admin_bypass', 'unrestricted', 'direct_grant', 'inherited_grant']
const DENYING = ['module_permission_missing', 'target_deleted', 'no_matching_grant']

/**
 * One small random world: two roles, two departments, two users, a form-folder tree, forms in
 * those folders (or none), shared items (some soft-deleted), a manual chapter with an entry, and
 * view grants on any of them. Built with direct inserts: the code under test is the access rule
 * of the lists and explain, not the creation.
 */
const world = fc.record({
  rolePermissions: fc.array(
    fc.constantFrom<string[]>([], ['forms.view'], ['forms.view', 'manuals.view'], ['manuals.view'], ['*']),
    { minLength: 2, maxLength: 2 },
  ),
  users: fc.array(fc.record({ role: fc.nat(1), departments: fc.subarray([0, 1]) }), { minLength: 2, maxLength: 2 }),
  // parent of folder i: null or an earlier folder
  parents: fc
    .array(fc.nat(10), { minLength: 1, maxLength: 3 })
    .map((raw) => raw.map((p, i) => (i === 0 || p % (i + 1) === i ? null : p % i))),
  // folder index of each form (null: no folder)
  forms: fc.array(fc.option(fc.nat(2), { nil: null }), { maxLength: 2 }),
  sharedItems: fc.array(fc.boolean(), { maxLength: 2 }),
  grants: fc.array(
    fc.record({
      on: fc.constantFrom('folder', 'form', 'sharedItem', 'manualChapter', 'manualEntry'),
      index: fc.nat(3),
      to: fc.constantFrom('user', 'role', 'department'),
      grantee: fc.nat(2),
    }),
    { maxLength: 6 },
  ),
})
type World = typeof world extends fc.Arbitrary<infer W> ? W : never

async function build(tenant: GivenTenant, w: World) {
  const roles = await Promise.all(w.rolePermissions.map((p) => given.role(db, tenant, p)))
  const departments = await Promise.all([0, 1].map(() => given.department(db, tenant)))
  const users = await Promise.all(
    w.users.map((u) =>
      given.user(db, tenant, { roleId: roles[u.role]!, departmentIds: u.departments.map((d) => departments[d]!) }),
    ),
  )
  const folders: number[] = []
  for (const parent of w.parents)
    folders.push(await given.folder(db, tenant, { type: 'form', parentId: parent === null ? null : folders[parent] }))
  const forms = await Promise.all(
    w.forms.map((f) =>
      given.content(db, tenant, 'forms', { name: 'form', folder_id: f === null ? null : folders[f % folders.length] }),
    ),
  )
  const sharedItems = await Promise.all(
    w.sharedItems.map((deleted, i) =>
      given.sharedItem(db, tenant, { type: 'form', targetable_id: forms[i] ?? 1, deleted }),
    ),
  )
  const chapter = await given.content(db, tenant, 'manual_chapters', { title: 'chapter' })
  const entry = await given.content(db, tenant, 'manual_entries', { chapter_id: chapter, title: 'entry', body: 'text' })
  const targets: Record<string, Array<number | string>> = {
    folder: folders,
    form: forms,
    sharedItem: sharedItems,
    manualChapter: [chapter],
    manualEntry: [entry],
  }
  const grants = w.grants
    .filter((g) => targets[g.on]!.length > 0)
    .map((g) => {
      const ids = targets[g.on]!
      const to =
        g.to === 'user'
          ? users[g.grantee % users.length]!.id
          : g.to === 'role'
            ? roles[g.grantee % roles.length]!
            : departments[g.grantee % departments.length]!
      return {
        tenant_id: tenant.id,
        key: 'view',
        permission_entity: g.to,
        permission_entity_id: to,
        target_entity: g.on,
        target_entity_id: String(ids[g.index % ids.length]),
      }
    })
  if (grants.length > 0)
    await db
      .insertInto('entity_permissions')
      .values(grants)
      .onConflict((oc) => oc.doNothing())
      .execute()
  return { users, targets, chapter }
}

/** Ids the user's list endpoints return, per target alias. */
async function listed(
  token: string,
  targets: Record<string, Array<number | string>>,
  chapter: number,
): Promise<Record<string, Set<string>>> {
  const ids = async (url: string) => {
    const res = await call(app, token, { method: 'GET', url })
    return new Set(
      res.statusCode === 200 ? (res.json() as Array<{ id: number | string }>).map((r) => String(r.id)) : [],
    )
  }
  const inFilter = (values: Array<number | string>) => `filter[id][in]=${values.length > 0 ? values.join(',') : '0'}`
  const [folder, form, sharedItem, manualChapter, manualEntry] = await Promise.all([
    ids(`/api/folders?${inFilter(targets.folder!)}&selects=id`),
    ids(`/api/forms?${inFilter(targets.form!)}`),
    targets.sharedItem!.length > 0 ? ids(`/api/shared-items?${inFilter(targets.sharedItem!)}`) : new Set<string>(),
    ids(`/api/manuals/chapters?${inFilter(targets.manualChapter!)}`),
    ids(`/api/manuals/chapters/${chapter}/entries`),
  ])
  return {
    folder: folder!,
    form: form!,
    sharedItem: sharedItem!,
    manualChapter: manualChapter!,
    manualEntry: manualEntry!,
  }
}

test('explain.allowed equals "the list endpoint returns it" for every user × target: folders, forms in folders, shared items, manual entries (fast-check, 500 cases)', async () => {
  const tenant = await given.tenant(db)
  // 500 worlds in one tenant are far more requests a minute than its fair-use budget (decision 0023)
  await given.exemptFromLimits(db, tenant)
  const seen = new Map<string, number>()
  await fc.assert(
    fc.asyncProperty(world, async (w) => {
      const { users, targets, chapter } = await build(tenant, w)
      await Promise.all(
        users.map(async (user) => {
          const visible = await listed(user.token, targets, chapter)
          await Promise.all(
            Object.entries(targets).flatMap(([alias, ids]) =>
              ids.map(async (id) => {
                {
                  const res = await call(app, tenant.adminToken, {
                    method: 'GET',
                    url: `/api/administration/access/explain?user_id=${user.id}&target_entity=${alias}&target_entity_id=${id}&key=view`,
                  })
                  assert.equal(res.statusCode, 200, res.body)
                  const explanation = res.json()
                  assert.equal(
                    explanation.allowed,
                    visible[alias]!.has(String(id)),
                    `user ${user.id} ${alias} ${id}: ${res.body}`,
                  )
                  assert.ok(
                    (explanation.allowed ? ALLOWING : DENYING).includes(explanation.reason),
                    `reason agrees with allowed: ${res.body}`,
                  )
                  if (explanation.reason === 'inherited_grant' || explanation.reason === 'no_matching_grant') {
                    const decider = explanation.decided_by
                    assert.ok(decider, res.body)
                    assert.equal(
                      explanation.folder_id,
                      decider.target_entity === 'folder' ? Number(decider.target_entity_id) : null,
                    )
                    if (decider.target_entity === 'folder')
                      assert.ok(explanation.path.includes(explanation.folder_id), res.body)
                  }
                  if (alias === 'folder') assert.equal(explanation.path.at(-1), id)
                  seen.set(`${alias}:${explanation.reason}`, (seen.get(`${alias}:${explanation.reason}`) ?? 0) + 1)
                }
              }),
            ),
          )
        }),
      )
    }),
    { numRuns: 500 },
  )
  // the worlds reach the interesting cases for non-folder targets too
  for (const key of [
    'form:inherited_grant',
    'form:no_matching_grant',
    'form:direct_grant',
    'sharedItem:direct_grant',
    'sharedItem:target_deleted',
    'manualEntry:inherited_grant',
    'folder:inherited_grant',
  ]) {
    assert.ok((seen.get(key) ?? 0) > 0, `${key} reached (${JSON.stringify(Object.fromEntries(seen))})`)
  }
})

test('explain reasons: inherited grant names the folder that carries it; why a grant does not match', async () => {
  const tenant = await given.tenant(db)
  const role = await given.role(db, tenant, ['forms.view'])
  const anna = await given.user(db, tenant, { roleId: role })
  const other = await given.user(db, tenant, { roleId: role })
  const post = async (payload: object) =>
    (await call(app, tenant.adminToken, { method: 'POST', url: '/api/folders', payload })).json().id as number
  const root = await post({ type: 'form', name: 'root' })
  const child = await post({ type: 'form', name: 'child', parent_id: root })
  await given.grant(db, tenant, { key: 'view', to: ['user', anna.id], on: ['folder', root] })
  const explain = async (userId: number, id: number | string, entity = 'folder') =>
    (
      await call(app, tenant.adminToken, {
        method: 'GET',
        url: `/api/administration/access/explain?user_id=${userId}&target_entity=${entity}&target_entity_id=${id}`,
      })
    ).json()
  const forAnna = await explain(anna.id, child)
  assert.deepEqual(
    [forAnna.allowed, forAnna.reason, forAnna.folder_id, forAnna.path],
    [true, 'inherited_grant', root, [root, child]],
  )
  const forOther = await explain(other.id, child)
  assert.deepEqual([forOther.allowed, forOther.reason, forOther.folder_id], [false, 'no_matching_grant', root])
  assert.deepEqual(
    forOther.grants.map((g: any) => [g.matches, g.why]),
    [[false, 'another user']],
  )
  const employee = await given.user(db, tenant)
  assert.equal(
    (
      await call(app, employee.token, {
        method: 'GET',
        url: `/api/administration/access/explain?user_id=${anna.id}&target_entity=folder&target_entity_id=${root}`,
      })
    ).statusCode,
    403,
  )

  // a form in the child folder inherits the root's restriction: explain says so, with the folder chain
  const form = await given.content(db, tenant, 'forms', { name: 'Leave request', folder_id: child })
  const formForAnna = await explain(anna.id, form, 'form')
  assert.deepEqual(
    [formForAnna.allowed, formForAnna.reason, formForAnna.folder_id, formForAnna.path, formForAnna.decided_by],
    [true, 'inherited_grant', root, [root, child], { target_entity: 'folder', target_entity_id: String(root) }],
  )
  const formForOther = await explain(other.id, form, 'form')
  assert.deepEqual(
    [formForOther.allowed, formForOther.reason, formForOther.folder_id],
    [false, 'no_matching_grant', root],
  )
  // a shared item has no folder: its own grants decide, and a soft-deleted item is never visible
  const item = await given.sharedItem(db, tenant, { type: 'form', targetable_id: form, deleted: true })
  const itemForAnna = await explain(anna.id, item, 'sharedItem')
  assert.deepEqual([itemForAnna.allowed, itemForAnna.reason, itemForAnna.path], [false, 'target_deleted', []])
  // unknown alias → 422; missing target → 404
  assert.equal(
    (
      await call(app, tenant.adminToken, {
        method: 'GET',
        url: `/api/administration/access/explain?user_id=${anna.id}&target_entity=nothing&target_entity_id=1`,
      })
    ).statusCode,
    422,
  )
  assert.equal(
    (
      await call(app, tenant.adminToken, {
        method: 'GET',
        url: `/api/administration/access/explain?user_id=${anna.id}&target_entity=form&target_entity_id=999999999`,
      })
    ).statusCode,
    404,
  )
})
