import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { fixture, multipart } from '../../../test/fixtures/users/forms.js'

// Shared items against the real content modules (their registered share targets and grant_token routes).
const db = testDb()
const app = await buildTestApp()
const png = fixture('pixel.png')

async function uploadFile(tenant: GivenTenant, filename: string): Promise<number> {
  const body = multipart({}, { file: { bytes: png, filename, contentType: 'image/png' } })
  const res = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/filemanager/files',
    payload: body.payload,
    headers: body.headers,
  })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().id
}

/** Path + query of an absolute URL, for app.inject. */
const local = (url: string) => {
  const parsed = new URL(url)
  return `${parsed.pathname}${parsed.search}`
}

test('a user without filemanager.view opens a restricted file through a redirectWithGrantToken item, and no other file', async () => {
  const tenant = await given.tenant(db)
  const guestRole = await given.role(db, tenant, [])
  const guest = await given.user(db, tenant, { roleId: guestRole })
  const owner = await given.user(db, tenant)
  const file = await uploadFile(tenant, 'secret.png')
  const otherFile = await uploadFile(tenant, 'other.png')
  // the file itself is restricted to someone else
  await given.grant(db, tenant, { key: 'view', to: ['user', owner.id], on: ['filemanagerFile', file] })
  const created = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/administration/shared-items',
    payload: {
      type: 'filemanagerFile',
      targetable_type: 'filemanagerFile',
      targetable_id: file,
      entity_permissions: [{ key: 'view', permission_entity: 'user', permission_entity_id: guest.id }],
    },
  })
  assert.equal(created.statusCode, 201, created.body)
  assert.equal(created.json().redirect_type, 'redirectWithGrantToken')

  const direct = await call(app, guest.token, { method: 'GET', url: `/api/filemanager/files/${file}/content` })
  const stable = await call(app, guest.token, {
    method: 'GET',
    url: `/shared/${created.json().id}?showFileContent=true`,
  })
  const location = stable.headers.location as string
  const content = await app.inject({ method: 'GET', url: local(location) })
  const token = new URL(location).searchParams.get('grant_token')!
  const show = await app.inject({ method: 'GET', url: `/api/filemanager/files/${file}?grant_token=${token}` })
  const otherContent = await app.inject({
    method: 'GET',
    url: `/api/filemanager/files/${otherFile}/content?grant_token=${token}`,
  })
  const otherShow = await app.inject({ method: 'GET', url: `/api/filemanager/files/${otherFile}?grant_token=${token}` })

  assert.notEqual(direct.statusCode, 200, 'without the token the guest cannot open the file')
  assert.equal(stable.statusCode, 302, stable.body)
  assert.equal(new URL(location).pathname, `/api/filemanager/files/${file}/content`)
  assert.equal(content.statusCode, 200, content.body)
  assert.deepEqual(content.rawPayload, png)
  assert.equal(show.statusCode, 200, show.body)
  assert.equal(show.json().id, file)
  assert.equal(otherContent.statusCode, 401, otherContent.body)
  assert.equal(otherShow.statusCode, 401, otherShow.body)

  // deleting the shared item revokes the token at once
  const removed = await call(app, tenant.adminToken, {
    method: 'DELETE',
    url: `/api/administration/shared-items/${created.json().id}`,
  })
  assert.equal(removed.statusCode, 204)
  assert.equal((await app.inject({ method: 'GET', url: local(location) })).statusCode, 401)
})

test('the "may share" rule and the redirect refusal use the real module view rule', async () => {
  const tenant = await given.tenant(db)
  const sharerRole = await given.role(db, tenant, ['sharedItems.administrate'])
  const sharer = await given.user(db, tenant, { roleId: sharerRole })
  const employee = await given.user(db, tenant)
  const file = await uploadFile(tenant, 'plan.png')

  const refused = await call(app, sharer.token, {
    method: 'POST',
    url: '/api/administration/shared-items',
    payload: {
      type: 'filemanagerFile',
      targetable_type: 'filemanagerFile',
      targetable_id: file,
      redirect_type: 'redirect',
    },
  })
  const created = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/administration/shared-items',
    payload: {
      type: 'filemanagerFile',
      targetable_type: 'filemanagerFile',
      targetable_id: file,
      redirect_type: 'redirect',
    },
  })
  const sharerResolves = await call(app, sharer.token, {
    method: 'GET',
    url: `/api/shared-items/${created.json().id}/resolve?downloadFileContent=1`,
  })
  const employeeResolves = await call(app, employee.token, {
    method: 'GET',
    url: `/api/shared-items/${created.json().id}/resolve?downloadFileContent=1`,
  })

  assert.equal(refused.statusCode, 403, refused.body)
  assert.equal(created.statusCode, 201, created.body)
  assert.equal(sharerResolves.statusCode, 403)
  assert.equal(sharerResolves.json().code, 'target_not_accessible')
  assert.equal(employeeResolves.statusCode, 200, employeeResolves.body)
  assert.equal(employeeResolves.json().url, `http://api.test/api/filemanager/files/${file}/download`)
  assert.equal(employeeResolves.json().url_context.title, 'plan.png')
})

test('a repeated click (the one-statement path) still follows retargeting, lost visibility, a deleted target and a deleted item', async () => {
  const tenant = await given.tenant(db)
  const viewerRole = await given.role(db, tenant, ['filemanager.view'])
  const viewer = await given.user(db, tenant, { roleId: viewerRole })
  const other = await given.user(db, tenant, { roleId: viewerRole })
  const first = await uploadFile(tenant, 'first.png')
  const second = await uploadFile(tenant, 'second.png')
  const created = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/administration/shared-items',
    payload: {
      type: 'filemanagerFile',
      targetable_type: 'filemanagerFile',
      targetable_id: first,
      redirect_type: 'redirect',
    },
  })
  assert.equal(created.statusCode, 201, created.body)
  const item = created.json().id as string
  const click = () => call(app, viewer.token, { method: 'GET', url: `/shared/${item}?downloadFileContent=1` })

  const clicks = [await click(), await click()]
  assert.deepEqual(
    clicks.map((c) => [c.statusCode, new URL(c.headers.location as string).pathname]),
    [
      [302, `/api/filemanager/files/${first}/download`],
      [302, `/api/filemanager/files/${first}/download`],
    ],
  )
  const retargeted = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/administration/shared-items/${item}`,
    payload: { targetable_type: 'filemanagerFile', targetable_id: second },
  })
  assert.equal(retargeted.statusCode, 200, retargeted.body)
  const afterRetarget = await click()
  assert.equal(new URL(afterRetarget.headers.location as string).pathname, `/api/filemanager/files/${second}/download`)

  await given.grant(db, tenant, { key: 'view', to: ['user', other.id], on: ['filemanagerFile', second] })
  const notVisible = await click()
  assert.equal(notVisible.statusCode, 403, notVisible.body)
  assert.equal(notVisible.json().code, 'target_not_accessible')

  assert.equal(
    (await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/filemanager/files/${second}` })).statusCode,
    204,
  )
  const targetGone = await click()
  assert.equal(targetGone.statusCode, 404, targetGone.body)
  assert.equal(targetGone.json().code, 'target_not_found')

  assert.equal(
    (await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/administration/shared-items/${item}` }))
      .statusCode,
    204,
  )
  assert.equal((await click()).statusCode, 404)
})

test('the one-statement click is the same statement as building it for this actor: module permission, admin, departments', async () => {
  const tenant = await given.tenant(db)
  const viewerRole = await given.role(db, tenant, ['filemanager.view'])
  const outsiderRole = await given.role(db, tenant, [])
  const viewer = await given.user(db, tenant, { roleId: viewerRole })
  const outsider = await given.user(db, tenant, { roleId: outsiderRole })
  const departmentMember = await given.user(db, tenant, { roleId: viewerRole })
  const department = await given.department(db, tenant, [departmentMember.id])
  const file = await uploadFile(tenant, 'team.png')
  await given.grant(db, tenant, { key: 'view', to: ['department', department], on: ['filemanagerFile', file] })
  const created = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/administration/shared-items',
    payload: {
      type: 'filemanagerFile',
      targetable_type: 'filemanagerFile',
      targetable_id: file,
      redirect_type: 'redirect',
    },
  })
  assert.equal(created.statusCode, 201, created.body)
  const click = (token: string) => call(app, token, { method: 'GET', url: `/shared/${created.json().id}` })

  // each user clicks twice: the second click takes the one-statement path, after another actor shaped it
  const statuses: Record<string, number[]> = {}
  for (const [name, token] of [
    ['member', departmentMember.token],
    ['viewer', viewer.token],
    ['outsider', outsider.token],
    ['admin', tenant.adminToken],
    ['member again', departmentMember.token],
  ] as const) {
    statuses[name] = [(await click(token)).statusCode, (await click(token)).statusCode]
  }

  assert.deepEqual(statuses, {
    member: [302, 302],
    viewer: [403, 403],
    outsider: [403, 403],
    admin: [302, 302],
    'member again': [302, 302],
  })
})

test('a content target that does not exist in the tenant answers 422 on targetable_id, one that exists is shared', async () => {
  const tenant = await given.tenant(db)
  const other = await given.tenant(db)
  const calendarEvent = (t: GivenTenant) =>
    given.content(db, t, 'calendar_events', {
      title: 'Kick-off',
      starts_at: '2026-01-05 09:00',
      ends_at: '2026-01-05 10:00',
    })
  const mine = await calendarEvent(tenant)
  const foreign = await calendarEvent(other)
  const share = (id: number) =>
    call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/administration/shared-items',
      payload: { type: 'calendarEvent', targetable_type: 'calendarEvent', targetable_id: id },
    })

  const missing = await share(foreign)
  const created = await share(mine)

  assert.equal(missing.statusCode, 422, missing.body)
  assert.deepEqual(Object.keys(missing.json().errors), ['targetable_id'])
  assert.equal(created.statusCode, 201, created.body)
  assert.equal(created.json().targetable_id, mine)
  const shown = await call(app, tenant.adminToken, { method: 'GET', url: `/api/shared-items/${created.json().id}` })
  assert.deepEqual(created.json(), shown.json(), 'the response is the item as a read shows it')
})
