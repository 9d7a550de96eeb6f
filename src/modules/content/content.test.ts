import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import type { FanOutPayload } from '../notifications/sending/fan-out.js'
import { runFanOut } from '../notifications/notifications.jobs.js'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()

/** One row per simple content module: where it lives and a valid create/update body. */
interface Case {
  alias: string
  module: string
  collection: string
  create: (folderId: number) => Record<string, unknown>
  update?: Record<string, unknown>
  folderType?: string
  invalid: { body: Record<string, unknown>; field: string }
}

const cases: Case[] = [
  {
    alias: 'calendarEvent',
    module: 'calendar',
    collection: '/api/calendar/events',
    create: () => ({ title: 'Standup', starts_at: '2026-03-01 09:00:00', ends_at: '2026-03-01T09:15:00Z' }),
    update: { title: 'Retro' },
    invalid: {
      body: { title: 'x', starts_at: '2026-03-02 09:00:00', ends_at: '2026-03-01 09:00:00' },
      field: 'ends_at',
    },
  },
  {
    alias: 'form',
    module: 'forms',
    collection: '/api/forms',
    folderType: 'form',
    create: (folderId) => ({ name: 'Holiday request', folder_id: folderId }),
    update: { name: 'Leave request' },
    invalid: { body: { name: '' }, field: 'name' },
  },
  {
    alias: 'infoboardPost',
    module: 'infoboard',
    collection: '/api/infoboard/posts',
    folderType: 'infoboardChannel',
    create: (folderId) => ({ channel_id: folderId, title: 'News', body: '<p>Hi<script>x()</script></p>' }),
    update: { title: 'More news' },
    invalid: { body: { title: 'x', body: 'y' }, field: 'channel_id' },
  },
  {
    alias: 'manualChapter',
    module: 'manuals',
    collection: '/api/manuals/chapters',
    create: () => ({ title: 'Safety' }),
    update: { title: 'Safety first' },
    invalid: { body: { title: 'x', extra: 1 }, field: 'extra' },
  },
  {
    alias: 'taskExecution',
    module: 'tasks',
    collection: '/api/tasks/executions',
    folderType: 'taskTemplate',
    create: (folderId) => ({ title: 'Close the store', folder_id: folderId, due_at: '2026-03-01' }),
    update: { done_at: '2026-03-01 18:00:00' },
    invalid: { body: { title: 'x', folder_id: 'seven' }, field: 'folder_id' },
  },
  {
    alias: 'filemanagerDirectory',
    module: 'filemanager',
    collection: '/api/filemanager/directories',
    create: () => ({ name: 'Contracts' }),
    invalid: { body: { name: 'x', parent_id: 999999999 }, field: 'parent_id' },
  },
]

async function eventsOf(tenant: GivenTenant, type: string) {
  return db
    .selectFrom('domain_events')
    .select(['subject_id', 'actor_id'])
    .where('tenant_id', '=', tenant.id)
    .where('type', '=', type)
    .execute()
}

async function setup(c: Case) {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const folderId = c.folderType ? await given.folder(db, tenant, { type: c.folderType }) : 0
  const employee = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, [`${c.module}.view`, 'taskTemplates.view']),
  })
  // every permission except this module's view: lacks only the module permission
  const withoutView = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, ['users.view', `${c.module === 'tasks' ? 'calendar' : 'tasks'}.view`]),
  })
  const manager = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, [`${c.module}.view`, `${c.module}.manage`, 'taskTemplates.view']),
  })
  const created = await call(app, manager.token, { method: 'POST', url: c.collection, payload: c.create(folderId) })
  assert.equal(created.statusCode, 201, created.body)
  return { app, tenant, folderId, employee, withoutView, manager, record: created.json() as Record<string, any> }
}

for (const c of cases) {
  test(`${c.alias}: create, show, list, update and delete with domain events`, async () => {
    const { app, tenant, manager, record } = await setup(c)
    assert.equal(record.user_id, manager.id)
    assert.deepEqual(
      (await eventsOf(tenant, `${c.alias}.created`)).map((e) => Number(e.subject_id)),
      [record.id],
    )

    const shown = await call(app, manager.token, {
      method: 'GET',
      url: `${c.collection}/${record.id}?selects=id,user_id`,
    })
    // posts carry the reader's own reading state by default (issue 41)
    const myState = c.alias === 'infoboardPost' ? { my_state: { seen_at: null, confirmed_at: null } } : {}
    assert.deepEqual(shown.json(), { id: record.id, user_id: manager.id, ...myState })
    const listed = await call(app, manager.token, { method: 'GET', url: `${c.collection}?limit=10` })
    assert.deepEqual(
      listed.json().map((r: { id: number }) => r.id),
      [record.id],
    )

    if (c.update) {
      const updated = await call(app, manager.token, {
        method: 'PUT',
        url: `${c.collection}/${record.id}`,
        payload: c.update,
      })
      assert.equal(updated.statusCode, 200, updated.body)
      for (const [key, value] of Object.entries(c.update))
        assert.match(String(updated.json()[key]), new RegExp(`^${String(value).slice(0, 10)}`))
      assert.equal((await eventsOf(tenant, `${c.alias}.updated`)).length, 1)
    }
    const deleted = await call(app, manager.token, { method: 'DELETE', url: `${c.collection}/${record.id}` })
    assert.equal(deleted.statusCode, 204)
    assert.equal((await eventsOf(tenant, `${c.alias}.deleted`)).length, 1)
    assert.equal(
      (await call(app, manager.token, { method: 'GET', url: `${c.collection}/${record.id}` })).statusCode,
      404,
    )
  })

  test(`${c.alias}: module permission first, then the record's view grants`, async () => {
    const { app, tenant, folderId, employee, withoutView, manager, record } = await setup(c)
    const item = `${c.collection}/${record.id}`
    // a viewer without manage: sees it, may not change it
    assert.equal((await call(app, employee.token, { method: 'GET', url: item })).statusCode, 200)
    assert.equal((await call(app, employee.token, { method: 'DELETE', url: item })).statusCode, 403)
    assert.equal(
      (await call(app, employee.token, { method: 'POST', url: c.collection, payload: c.create(folderId) })).statusCode,
      403,
    )
    // no module view permission
    assert.equal((await call(app, withoutView.token, { method: 'GET', url: c.collection })).statusCode, 403)
    assert.equal((await call(app, withoutView.token, { method: 'GET', url: item })).statusCode, 403)
    // a view grant to someone else restricts it: 404 on show, absent from the list, even for a manager
    await given.grant(db, tenant, { key: 'view', to: ['user', employee.id], on: [c.alias, record.id] })
    assert.equal((await call(app, manager.token, { method: 'GET', url: item })).statusCode, 404)
    assert.equal((await call(app, manager.token, { method: 'DELETE', url: item })).statusCode, 404)
    assert.deepEqual((await call(app, manager.token, { method: 'GET', url: c.collection })).json(), [])
    assert.equal((await call(app, employee.token, { method: 'GET', url: item })).statusCode, 200)
    assert.equal((await call(app, tenant.adminToken, { method: 'GET', url: item })).statusCode, 200)
  })

  test(`${c.alias}: another tenant's id is 404 and invalid input names the field`, async () => {
    const { app, record } = await setup(c)
    const other = await given.tenant(db)
    for (const method of ['GET', 'DELETE'] as const) {
      assert.equal((await call(app, other.adminToken, { method, url: `${c.collection}/${record.id}` })).statusCode, 404)
    }
    const bad = await call(app, other.adminToken, { method: 'POST', url: c.collection, payload: c.invalid.body })
    assert.equal(bad.statusCode, 422, bad.body)
    assert.ok(bad.json().errors[c.invalid.field], JSON.stringify(bad.json()))
  })
}

for (const c of cases.filter((x) => x.folderType)) {
  test(`${c.alias}: inherits its folder's visibility down the tree, and is detached when the folder is deleted`, async () => {
    const app = await buildTestApp()
    const tenant = await given.tenant(db)
    const viewer = await given.user(db, tenant, {
      roleId: await given.role(db, tenant, [`${c.module}.view`, 'taskTemplates.view']),
    })
    const outsider = await given.user(db, tenant, {
      roleId: await given.role(db, tenant, [`${c.module}.view`, 'taskTemplates.view']),
    })
    const root = await given.folder(db, tenant, { type: c.folderType })
    const child = await given.folder(db, tenant, { parentId: root })
    await given.grant(db, tenant, { key: 'view', to: ['user', viewer.id], on: ['folder', root] })
    const record = (
      await call(app, tenant.adminToken, { method: 'POST', url: c.collection, payload: c.create(child) })
    ).json()
    const item = `${c.collection}/${record.id}`

    assert.equal((await call(app, viewer.token, { method: 'GET', url: item })).statusCode, 200)
    assert.equal((await call(app, outsider.token, { method: 'GET', url: item })).statusCode, 404)
    assert.deepEqual((await call(app, outsider.token, { method: 'GET', url: c.collection })).json(), [])

    assert.equal(
      (await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/folders/${root}` })).statusCode,
      204,
    )
    const detached = await call(app, outsider.token, { method: 'GET', url: item })
    assert.equal(detached.statusCode, 200)
    assert.equal(Object.values(detached.json()).filter((v) => v === child).length, 0)
  })
}

test('infoboard posts: bodies are sanitized, channel must be an infoboardChannel folder', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const channel = await given.folder(db, tenant, { type: 'infoboardChannel' })
  const formFolder = await given.folder(db, tenant, { type: 'form' })
  const post = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/infoboard/posts',
    payload: { channel_id: channel, title: 't', body: '<p onclick="x()">Hi<script>x()</script></p>' },
  })
  assert.equal(post.json().body, '<p>Hi</p>')
  const wrong = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/infoboard/posts',
    payload: { channel_id: formFolder, title: 't', body: 'b' },
  })
  assert.equal(wrong.statusCode, 422)
  assert.ok(wrong.json().errors.channel_id)
})

async function fanOutFor(sourcePrefix: string) {
  const { rows } = await sql<{ payload: FanOutPayload }>`
    select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'notifications:fan_out' and j.key like ${`notifications:fan_out:${sourcePrefix}%`} order by j.id`.execute(
    db,
  )
  for (const { payload } of rows) await runFanOut(db, payload)
  return rows.length
}

const notified = async (tenant: GivenTenant, type: string, targetId: number) =>
  (
    await db
      .selectFrom('notifications')
      .select('notifiable_id')
      .where('tenant_id', '=', tenant.id)
      .where('type', '=', type)
      .where('targetable_id', '=', targetId)
      .orderBy('notifiable_id')
      .execute()
  ).map((r) => Number(r.notifiable_id))

test('infoboard post notifications go to every user who can view the post, except its author', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const channel = await given.folder(db, tenant, { type: 'infoboardChannel' })
  const inside = await given.user(db, tenant)
  const viaDepartment = await given.user(db, tenant)
  const outside = await given.user(db, tenant)
  const secondAdmin = await given.user(db, tenant, { roleId: tenant.adminRoleId })
  const noModule = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['users.view']) })
  await given.user(db, tenant, { active: false })
  const department = await given.department(db, tenant, [viaDepartment.id])
  await given.grant(db, tenant, { key: 'view', to: ['user', inside.id], on: ['folder', channel] })
  await given.grant(db, tenant, { key: 'view', to: ['department', department], on: ['folder', channel] })

  const post = (
    await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/infoboard/posts',
      payload: { channel_id: channel, title: 'Hello', body: 'b' },
    })
  ).json()
  assert.equal(await fanOutFor(`infoboardPostCreated:${post.id}:`), 1)
  const viewers = [inside.id, viaDepartment.id, secondAdmin.id].sort((a, b) => a - b)
  assert.deepEqual(await notified(tenant, 'infoboardPostCreated', post.id), viewers)
  assert.ok(!viewers.includes(outside.id))

  // the set-based rule agrees with the per-request rule for every (active) user of the tenant
  for (const user of [inside, viaDepartment, outside, secondAdmin, noModule]) {
    const canView =
      (await call(app, user.token, { method: 'GET', url: `/api/infoboard/posts/${post.id}` })).statusCode === 200
    assert.equal(viewers.includes(user.id), canView, `user ${user.id}`)
  }

  const put = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/infoboard/posts/${post.id}`,
    // an edit of a published post notifies only when the editor asks (issue 41)
    payload: { requires_reading_confirmation: true, notify: true },
  })
  assert.equal(put.statusCode, 200)
  await fanOutFor(`infoboardPostUpdated:${post.id}:`)
  await fanOutFor(`infoboardPostReadingConfirmationRequired:${post.id}:`)
  assert.deepEqual(await notified(tenant, 'infoboardPostUpdated', post.id), viewers)
  assert.deepEqual(await notified(tenant, 'infoboardPostReadingConfirmationRequired', post.id), viewers)
  const [record] = await db
    .selectFrom('notifications')
    .select(['data', 'targetable_type'])
    .where('tenant_id', '=', tenant.id)
    .where('type', '=', 'infoboardPostUpdated')
    .limit(1)
    .execute()
  assert.equal(record.targetable_type, 'infoboardPost')
  assert.equal((record.data as { url: string }).url, `/infoboard/posts/${post.id}`)
})

test('a manual entry update notifies the viewers of the entry (chapter and entry grants) except its author', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const author = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, ['manuals.view', 'manuals.manage']),
  })
  const reader = await given.user(db, tenant)
  const blockedByChapter = await given.user(db, tenant)
  const chapter = (
    await call(app, author.token, { method: 'POST', url: '/api/manuals/chapters', payload: { title: 'C' } })
  ).json()
  const entry = await call(app, author.token, {
    method: 'POST',
    url: `/api/manuals/chapters/${chapter.id}/entries`,
    payload: { title: 'E', body: 'b' },
  })
  assert.equal(entry.statusCode, 201, entry.body)
  await given.grant(db, tenant, { key: 'view', to: ['user', reader.id], on: ['manualChapter', chapter.id] })
  await given.grant(db, tenant, { key: 'view', to: ['user', author.id], on: ['manualChapter', chapter.id] })

  assert.equal(
    (await call(app, blockedByChapter.token, { method: 'GET', url: `/api/manuals/entries/${entry.json().id}` }))
      .statusCode,
    404,
  )
  assert.equal(
    (await call(app, blockedByChapter.token, { method: 'GET', url: `/api/manuals/chapters/${chapter.id}/entries` }))
      .statusCode,
    404,
  )
  const put = await call(app, author.token, {
    method: 'PUT',
    url: `/api/manuals/entries/${entry.json().id}`,
    payload: { body: 'new' },
  })
  assert.equal(put.statusCode, 200, put.body)
  await fanOutFor(`manualEntryUpdated:${entry.json().id}:`)
  assert.deepEqual(
    await notified(tenant, 'manualEntryUpdated', entry.json().id),
    [tenant.adminId, reader.id].sort((a, b) => a - b),
  )
  // deleting the chapter takes the entry and its grants with it
  await given.grant(db, tenant, { key: 'write', to: ['user', reader.id], on: ['manualEntry', entry.json().id] })
  assert.equal(
    (await call(app, author.token, { method: 'DELETE', url: `/api/manuals/chapters/${chapter.id}` })).statusCode,
    204,
  )
  const left = await db.selectFrom('entity_permissions').select('id').where('tenant_id', '=', tenant.id).execute()
  assert.deepEqual(left, [])
})

test('form messages: any viewer of the form sends; reading needs the viewFormMessages rule', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const sender = await given.user(db, tenant)
  const reader = await given.user(db, tenant)
  const form = (
    await call(app, tenant.adminToken, { method: 'POST', url: '/api/forms', payload: { name: 'F' } })
  ).json()
  const sent = await call(app, sender.token, {
    method: 'POST',
    url: `/api/forms/${form.id}/messages`,
    payload: { data: { text: 'hello' } },
  })
  assert.equal(sent.statusCode, 201, sent.body)
  assert.deepEqual(sent.json().data, { text: 'hello' })
  assert.equal((await eventsOf(tenant, 'formMessage.created')).length, 1)
  assert.equal(
    (await call(app, sender.token, { method: 'GET', url: `/api/forms/${form.id}/messages` })).json().length,
    1,
  )

  await given.grant(db, tenant, { key: 'viewFormMessages', to: ['user', reader.id], on: ['form', form.id] })
  assert.deepEqual((await call(app, sender.token, { method: 'GET', url: `/api/forms/${form.id}/messages` })).json(), [])
  assert.equal(
    (await call(app, reader.token, { method: 'GET', url: `/api/forms/${form.id}/messages` })).json().length,
    1,
  )
  const bad = await call(app, sender.token, {
    method: 'POST',
    url: `/api/forms/${form.id}/messages`,
    payload: { data: 'x' },
  })
  assert.equal(bad.statusCode, 422)
  assert.ok(bad.json().errors.data)
  // a form the sender cannot view: 404
  await given.grant(db, tenant, { key: 'view', to: ['user', reader.id], on: ['form', form.id] })
  assert.equal(
    (await call(app, sender.token, { method: 'POST', url: `/api/forms/${form.id}/messages`, payload: { data: {} } }))
      .statusCode,
    404,
  )
})

test('infoboard comments: viewers read them; posting needs the comment rule', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const channel = await given.folder(db, tenant, { type: 'infoboardChannel' })
  const commenter = await given.user(db, tenant)
  const reader = await given.user(db, tenant)
  const post = (
    await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/infoboard/posts',
      payload: { channel_id: channel, title: 't', body: 'b' },
    })
  ).json()
  const url = `/api/infoboard/posts/${post.id}/comments`
  assert.equal((await call(app, reader.token, { method: 'POST', url, payload: { body: 'first' } })).statusCode, 201)
  await given.grant(db, tenant, { key: 'comment', to: ['user', commenter.id], on: ['infoboardPost', post.id] })
  assert.equal((await call(app, reader.token, { method: 'POST', url, payload: { body: 'again' } })).statusCode, 403)
  assert.equal((await call(app, commenter.token, { method: 'POST', url, payload: { body: 'ok' } })).statusCode, 201)
  const listed = await call(app, reader.token, { method: 'GET', url })
  assert.deepEqual(
    listed.json().map((c: { body: string }) => c.body),
    ['first', 'ok'],
  )
  assert.equal((await eventsOf(tenant, 'infoboardComment.created')).length, 2)
})
