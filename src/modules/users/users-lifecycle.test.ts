import assert from 'node:assert/strict'
import fs from 'node:fs/promises'
import path from 'node:path'
import { test } from 'node:test'
import { sql } from 'kysely'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given, TEST_PASSWORD } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { fixture, multipart } from '../../../test/fixtures/users/forms.js'

const db = testDb()
const me = (app: Awaited<ReturnType<typeof buildTestApp>>, token: string) =>
  call(app, token, { method: 'GET', url: '/api/users/current' })
const eventTypes = async (tenantId: number, subjectId: number) =>
  (
    await db
      .selectFrom('domain_events')
      .select('type')
      .where('tenant_id', '=', tenantId)
      .where('subject_id', '=', String(subjectId))
      .orderBy('occurred_at')
      .execute()
  ).map((e) => e.type)

test('an administrator marks another user for logout: their old token fails on the next request', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const target = await given.user(db, tenant)
  assert.equal((await me(app, target.token)).statusCode, 200)

  const res = await call(app, tenant.adminToken, { method: 'POST', url: `/api/users/logout/${target.id}` })

  assert.equal(res.statusCode, 200)
  assert.deepEqual({ status: res.json().status, id: res.json().data.id }, { status: 'success', id: target.id })
  assert.equal((await me(app, target.token)).statusCode, 401)
  const fresh = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: target.username, password: TEST_PASSWORD },
  })
  assert.equal((await me(app, fresh.json().access_token)).statusCode, 200)
  // the sign-in after it is an event too (issue 40: every audited change is one)
  assert.deepEqual(await eventTypes(tenant.id, target.id), ['user.loggedOut', 'auth.signedIn'])
})

test('a user logs out their own account, but a protected user may not (403 logout_prevented)', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const plain = await given.user(db, tenant)
  const protectedUser = await given.user(db, tenant, { prevent_logout: true })

  const own = await call(app, plain.token, { method: 'POST', url: `/api/users/logout/${plain.id}` })
  const prevented = await call(app, protectedUser.token, {
    method: 'POST',
    url: `/api/users/logout/${protectedUser.id}`,
  })
  const byAdmin = await call(app, tenant.adminToken, { method: 'POST', url: `/api/users/logout/${protectedUser.id}` })

  assert.equal(own.statusCode, 200)
  assert.equal((await me(app, plain.token)).statusCode, 401)
  assert.equal(prevented.statusCode, 403)
  assert.equal(prevented.json().code, 'logout_prevented')
  assert.equal(byAdmin.statusCode, 200)
})

test('logging out another user needs users.administrate', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const colleague = await given.user(db, tenant)
  const target = await given.user(db, tenant)

  const res = await call(app, colleague.token, { method: 'POST', url: `/api/users/logout/${target.id}` })

  assert.equal(res.statusCode, 403)
  assert.equal((await me(app, target.token)).statusCode, 200)
})

test('DELETE soft-deletes a user: envelope data null, tokens rejected, user.deleted recorded', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const target = await given.user(db, tenant)

  const res = await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/users/${target.id}` })

  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), { status: 'success', data: null })
  assert.equal((await me(app, target.token)).statusCode, 401)
  const listed = (await call(app, tenant.adminToken, { method: 'GET', url: '/api/users' }))
    .json()
    .map((u: { id: number }) => u.id)
  assert.ok(!listed.includes(target.id))
  assert.deepEqual(await eventTypes(tenant.id, target.id), ['user.deleted'])
  assert.equal(
    (await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/users/${target.id}` })).statusCode,
    404,
  )
})

test('nobody deletes their own account (403 cannot_delete_self); users.delete is needed', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const colleague = await given.user(db, tenant)

  const self = await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/users/${tenant.adminId}` })
  const noPermission = await call(app, colleague.token, { method: 'DELETE', url: `/api/users/${tenant.adminId}` })

  assert.equal(self.statusCode, 403)
  assert.equal(self.json().code, 'cannot_delete_self')
  assert.equal(noPermission.statusCode, 403)
  assert.equal(
    (await db.selectFrom('users').select('deleted_at').where('id', '=', tenant.adminId).executeTakeFirstOrThrow())
      .deleted_at,
    null,
  )
})

test('restore brings a deleted user back, optionally with a new active role; old tokens stay revoked', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const target = await given.user(db, tenant)
  const inactiveRole = await given.role(db, tenant, [], { active: false })
  const newRole = await given.role(db, tenant, ['users.view'])
  await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/users/${target.id}` })

  const badRole = await call(app, tenant.adminToken, {
    method: 'POST',
    url: `/api/users/restore/${target.id}`,
    payload: { role_id: inactiveRole },
  })
  const res = await call(app, tenant.adminToken, {
    method: 'POST',
    url: `/api/users/restore/${target.id}`,
    payload: { role_id: newRole },
  })
  const again = await call(app, tenant.adminToken, { method: 'POST', url: `/api/users/restore/${target.id}` })

  assert.equal(badRole.statusCode, 422)
  assert.ok(badRole.json().errors.role_id)
  assert.equal(res.statusCode, 200)
  assert.equal(res.json().data.deleted_at, null)
  assert.equal(res.json().data.role_id, newRole)
  assert.equal(again.statusCode, 422)
  assert.equal(again.json().code, 'not_deleted')
  assert.equal((await me(app, target.token)).statusCode, 401, 'a restored user logs in again')
  assert.deepEqual(await eventTypes(tenant.id, target.id), ['user.deleted', 'user.restored'])
})

test('restore needs users.administrate', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const deleter = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['users.delete', 'users.view']) })
  const target = await given.user(db, tenant, { deleted_at: sql`now()` })

  const res = await call(app, deleter.token, { method: 'POST', url: `/api/users/restore/${target.id}` })

  assert.equal(res.statusCode, 403)
})

const PERSONAL = {
  email: 'erika@example.com',
  phone: '+49 170 5555',
  street: 'Musterweg 5',
  zipcode: '12345',
  city: 'Musterstadt',
  birthdate: '1970-01-02',
  gender: 'female',
  entering_date: '2010-01-01',
  leaving_date: '2030-01-01',
  staff_number: 'EM-77',
  default_route: '/erika/home',
  wants_email_notifications: true,
  prevent_logout: true,
}

test('black-out anonymizes every personal column, keeps the id and frees the old username', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const target = await given.user(db, tenant, {
    username: 'erika.m',
    first_name: 'Erika',
    last_name: 'Mustermann',
    ...PERSONAL,
  })
  await given.department(db, tenant, [target.id])
  const upload = multipart({}, { profile_picture: { bytes: fixture('pixel.png'), filename: 'me.png' } })
  const withPicture = await call(app, tenant.adminToken, { method: 'PUT', url: `/api/users/${target.id}`, ...upload })
  const pictureName = withPicture.json().data.profile_picture as string
  const picturePath = path.join(process.env.TEST_STORAGE_DIR!, 'profile-pictures', String(tenant.id), pictureName)
  await fs.access(picturePath)
  await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: 'erika.m', password: 'wrong-password' },
  })

  const res = await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/users/blackout/${target.id}` })

  assert.equal(res.statusCode, 200)
  const data = res.json().data
  assert.equal(data.id, target.id)
  assert.match(data.username, /^blackout-[0-9a-f]{16}$/)
  // the pseudonym (issue 45): "Former employee" + a code unique in the tenant, taken from the username
  assert.equal(data.full_name, `Former employee ${data.username.slice(9, 17)}`)
  assert.notEqual(data.deleted_at, null)
  assert.notEqual(data.blacked_out_at, null)
  const row = await db.selectFrom('users').selectAll().where('id', '=', target.id).executeTakeFirstOrThrow()
  assert.equal(row.first_name, 'Former employee')
  assert.match(row.last_name, /^[0-9a-f]{8}$/)
  assert.equal(row.password_hash, '!unusable')
  for (const column of [
    'email',
    'phone',
    'street',
    'zipcode',
    'city',
    'birthdate',
    'gender',
    'entering_date',
    'leaving_date',
    'staff_number',
    'default_route',
    'profile_picture',
  ] as const) {
    assert.equal(row[column], null, column)
  }
  assert.equal(row.wants_email_notifications, false)
  assert.equal(row.prevent_logout, false)
  assert.equal(row.active, false)
  assert.equal(
    await fs.access(picturePath).then(
      () => 'exists',
      () => 'gone',
    ),
    'gone',
  )
  assert.equal((await db.selectFrom('access_tokens').select('id').where('user_id', '=', target.id).execute()).length, 0)
  assert.equal(
    (await db.selectFrom('department_users').select('user_id').where('user_id', '=', target.id).execute()).length,
    0,
  )
  assert.equal(
    (await db.selectFrom('login_failures').select('id').where('tenant_slug', '=', tenant.slug).execute()).length,
    0,
  )
  const residue = await sql<{
    hits: number
  }>`select count(*)::int as hits from users u where u.id = ${target.id} and u::text ~* 'erika|mustermann|musterweg|5555|EM-77'`.execute(
    db,
  )
  assert.equal(residue.rows[0].hits, 0, 'no personal value survives anywhere in the row')
  const events = await db
    .selectFrom('domain_events')
    .select('data')
    .where('subject_id', '=', String(target.id))
    .execute()
  assert.ok(events.every((e) => !/erika|mustermann/i.test(JSON.stringify(e.data))))
  const reuse = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    payload: {
      username: 'erika.m',
      password: 'long-enough-1',
      first_name: 'E',
      last_name: 'M',
      role_id: tenant.employeeRoleId,
    },
  })
  assert.equal(reuse.statusCode, 201, 'the old username is free again')
  const login = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: data.username, password: TEST_PASSWORD },
  })
  assert.equal(login.statusCode, 401)
})

test('black-out works on a deleted user; a second black-out is 422; restore of it is refused', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const target = await given.user(db, tenant, { deleted_at: sql`'2020-01-01'` })

  const first = await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/users/blackout/${target.id}` })
  const second = await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/users/blackout/${target.id}` })
  const restore = await call(app, tenant.adminToken, { method: 'POST', url: `/api/users/restore/${target.id}` })

  assert.equal(first.statusCode, 200)
  assert.equal(first.json().data.deleted_at, '2020-01-01 00:00:00', 'an existing deleted_at is kept')
  assert.equal(second.statusCode, 422)
  assert.equal(second.json().code, 'already_blacked_out')
  assert.equal(restore.statusCode, 422)
  assert.equal(restore.json().code, 'blacked_out')
  assert.deepEqual(await eventTypes(tenant.id, target.id), ['user.blackedOut'])
})

test("black-out refuses the requester's own account and needs users.administrate", async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const deleter = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['users.delete']) })
  const target = await given.user(db, tenant)

  const self = await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/users/blackout/${tenant.adminId}` })
  const noPermission = await call(app, deleter.token, { method: 'DELETE', url: `/api/users/blackout/${target.id}` })

  assert.equal(self.statusCode, 403)
  assert.equal(noPermission.statusCode, 403)
  assert.equal(
    (await db.selectFrom('users').select('blacked_out_at').where('id', '=', target.id).executeTakeFirstOrThrow())
      .blacked_out_at,
    null,
  )
})
