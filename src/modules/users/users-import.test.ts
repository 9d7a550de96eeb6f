import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { csvFixture, fixture, multipart } from '../../../test/fixtures/users/forms.js'

const db = testDb()
type Tenant = Awaited<ReturnType<typeof given.tenant>>
const upload = async (
  tenant: Tenant,
  csv: Buffer | string,
  fields: Record<string, string> = {},
  token = tenant.adminToken,
) =>
  call(await buildTestApp(), token, {
    method: 'POST',
    url: '/api/users/csv',
    ...multipart(fields, {
      user_data_csv: { bytes: Buffer.from(csv), filename: 'users.csv', contentType: 'text/csv' },
    }),
  })
const userCount = async (tenantId: number) =>
  (await db.selectFrom('users').select('id').where('tenant_id', '=', tenantId).execute()).length

test('the import template is one CRLF header row, with query values replacing headers', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const viewer = await given.user(db, tenant)

  const plain = await call(app, tenant.adminToken, { method: 'GET', url: '/api/users/import-template' })
  const renamed = await call(app, tenant.adminToken, {
    method: 'GET',
    url: '/api/users/import-template?username=Login&lang_id=Sprache,%20Code',
  })
  const refused = await call(app, viewer.token, { method: 'GET', url: '/api/users/import-template' })

  assert.equal(plain.statusCode, 200)
  assert.equal(plain.body, 'username,password,first_name,last_name,active,group_account,role_id,lang_id\r\n')
  assert.equal(plain.headers['content-type'], 'text/csv; charset=UTF-8')
  assert.equal(plain.headers['content-disposition'], 'attachment; filename="users-import-template.csv"')
  assert.equal(
    renamed.body,
    'Login,password,first_name,last_name,active,group_account,role_id,lang_id\r\n'.replace(
      'lang_id',
      '"Sprache, Code"',
    ),
  )
  assert.equal(refused.statusCode, 403)
})

test('a German-Excel CSV (BOM, semicolons, CRLF, umlauts, DD.MM.YYYY, remapped header) parses', async () => {
  const tenant = await given.tenant(db)

  const res = await upload(tenant, csvFixture('excel-de.csv', tenant.employeeRoleId), { username: 'Benutzername' })

  assert.equal(res.statusCode, 200, res.body)
  const { status, data } = res.json()
  assert.equal(status, 'success')
  assert.equal(data.new_users.length, 2)
  const [juergen, zoe] = data.new_users
  assert.deepEqual(
    { ...juergen, password: undefined },
    {
      username: 'juergen.mueller',
      password: undefined,
      first_name: 'Jürgen',
      last_name: 'Müller',
      role_id: tenant.employeeRoleId,
      lang_id: 'de-DE',
      active: true,
      birthdate: '1980-12-31 00:00:00',
      city: 'München',
      street: 'Hauptstraße 1; Hinterhaus',
    },
  )
  assert.ok(juergen.password.length >= 16, 'an empty password cell gets a generated password')
  assert.equal(zoe.password, 'Geheim12345')
  assert.equal(zoe.active, false)
  assert.equal(zoe.lang_id, null)
  assert.equal(zoe.street, '', 'blank stays "" without whitespace_to_null')
  assert.deepEqual(data.update_users, [])
  assert.deepEqual(data.delete_users, [])
  assert.equal(await userCount(tenant.id), 1, 'nothing is persisted')
})

test('a username outside the allowed characters (e.g. with umlauts) is a row error', async () => {
  const tenant = await given.tenant(db)

  const res = await upload(
    tenant,
    `username;first_name;last_name;role_id\r\njürgen;Jürgen;Müller;${tenant.employeeRoleId}\r\n`,
  )

  assert.equal(res.statusCode, 422)
  assert.deepEqual(Object.keys(res.json().errors), ['rows.2.username'])
})

test('quoted commas and newlines parse; whitespace_to_null turns blank nullable cells into null', async () => {
  const tenant = await given.tenant(db)

  const res = await upload(tenant, csvFixture('quoted-commas.csv', tenant.employeeRoleId), {
    whitespace_to_null: 'true',
  })

  assert.equal(res.statusCode, 200, res.body)
  const [anna, ben] = res.json().data.new_users
  assert.equal(anna.last_name, 'Schmidt, Dr.')
  assert.equal(anna.street, 'Line one\nLine two')
  assert.equal(ben.street, null)
  assert.equal(ben.city, 'Hamburg')
})

test('every bad row is reported as rows.<line>.<key>, duplicates within the file included', async () => {
  const tenant = await given.tenant(db)

  const res = await upload(tenant, csvFixture('bad-rows.csv', tenant.employeeRoleId))

  assert.equal(res.statusCode, 422)
  const errors = res.json().errors
  assert.deepEqual(Object.keys(errors).sort(), [
    'rows.3.email',
    'rows.3.first_name',
    'rows.3.gender',
    'rows.3.password',
    'rows.3.role_id',
    'rows.3.username',
    'rows.4.username',
  ])
  assert.match(errors['rows.4.username'][0], /more than once.*line 2/)
  assert.equal(await userCount(tenant.id), 1)
})

test('update_users lists existing users with their id; delete_users lists absent users but never the requester', async () => {
  const tenant = await given.tenant(db)
  const existing = await given.user(db, tenant, { username: 'Existing.One' })
  const absent = await given.user(db, tenant, { username: 'absent', first_name: 'Ab', last_name: 'Sent' })
  await given.user(db, tenant, { username: 'deleted.absent', deleted_at: sql`now()` })
  const csv = `username,first_name,last_name,role_id,password\nexisting.one,Renamed,User,,\nfresh,Fresh,Person,${tenant.employeeRoleId},\n`

  const without = await upload(tenant, csv)
  const withFlags = await upload(tenant, csv, { update_users: '1', delete_users: 'true' })

  assert.deepEqual(without.json().data.update_users, [])
  assert.deepEqual(
    without.json().data.new_users.map((u: { username: string }) => u.username),
    ['fresh'],
  )
  const data = withFlags.json().data
  assert.equal(withFlags.statusCode, 200, withFlags.body)
  assert.deepEqual(data.update_users, [
    { id: existing.id, username: 'existing.one', first_name: 'Renamed', last_name: 'User' },
  ])
  assert.equal('password' in data.update_users[0], false, 'an empty password keeps the current one')
  assert.deepEqual(data.delete_users, [{ id: absent.id, username: 'absent', first_name: 'Ab', last_name: 'Sent' }])
})

test('a row matching a soft-deleted user is a row error', async () => {
  const tenant = await given.tenant(db)
  await given.user(db, tenant, { username: 'was.here', deleted_at: sql`now()` })

  const res = await upload(tenant, `username,first_name,last_name,role_id\nwas.here,W,H,${tenant.employeeRoleId}\n`, {
    update_users: 'true',
  })

  assert.equal(res.statusCode, 422)
  assert.deepEqual(Object.keys(res.json().errors), ['rows.2.username'])
})

test('header problems: unknown column, mass-assignment columns, missing username, bad remap → 422', async () => {
  const tenant = await given.tenant(db)

  const unknown = await upload(tenant, 'username,nickname\nx,y\n')
  const roleColumn = await upload(tenant, 'username,tenant_id,role\nx,1,admin\n')
  const noUsername = await upload(tenant, 'first_name,last_name\nA,B\n')
  const badRemap = await upload(tenant, 'Login,first_name\nx,y\n', { username: 'Benutzer' })

  assert.equal(unknown.statusCode, 422)
  assert.match(unknown.json().errors.user_data_csv[0], /nickname/)
  assert.equal(roleColumn.statusCode, 422)
  assert.equal(roleColumn.json().errors.user_data_csv.length, 2)
  assert.equal(noUsername.statusCode, 422)
  assert.match(noUsername.json().errors.user_data_csv[0], /username/)
  assert.equal(badRemap.statusCode, 422)
  assert.ok(badRemap.json().errors.username)
})

test('non-CSV uploads, other encodings, empty files and a missing file are 422; header only gives empty arrays', async () => {
  const tenant = await given.tenant(db)

  const png = await upload(tenant, fixture('pixel.png'))
  const cp1252 = await upload(
    tenant,
    Buffer.from([0x75, 0x73, 0x65, 0x72, 0x6e, 0x61, 0x6d, 0x65, 0x0a, 0x52, 0xe9, 0x6d, 0x79, 0x0a]),
  )
  const empty = await upload(tenant, '')
  const missing = await call(await buildTestApp(), tenant.adminToken, {
    method: 'POST',
    url: '/api/users/csv',
    ...multipart({ update_users: 'true' }),
  })
  const headerOnly = await upload(tenant, 'username,first_name\r\n')

  for (const res of [png, cp1252, empty, missing]) {
    assert.equal(res.statusCode, 422, res.body)
    assert.ok(res.json().errors.user_data_csv)
  }
  assert.equal(headerOnly.statusCode, 200)
  assert.deepEqual(headerOnly.json().data, { new_users: [], update_users: [], delete_users: [] })
})

test('more than 10,000 data rows is 422; a CSV over 5 MiB is 413; users.administrate is needed', async () => {
  const tenant = await given.tenant(db)
  const viewer = await given.user(db, tenant)
  const rows = Array.from({ length: 10_001 }, (_, i) => `user${i},A,B,${tenant.employeeRoleId}`).join('\n')

  const tooMany = await upload(tenant, `username,first_name,last_name,role_id\n${rows}\n`)
  const tooBig = await upload(tenant, `username\n${'x'.repeat(5 * 1024 * 1024)}\n`)
  const refused = await upload(tenant, 'username\nx\n', {}, viewer.token)

  assert.equal(tooMany.statusCode, 422)
  assert.match(tooMany.json().errors.user_data_csv[0], /10000/)
  assert.equal(tooBig.statusCode, 413)
  assert.equal(refused.statusCode, 403)
})

test('exactly 10,000 valid rows parse', async () => {
  const tenant = await given.tenant(db)
  const rows = Array.from(
    { length: 10_000 },
    (_, i) => `user${i},Secret-password-${i},A,B,${tenant.employeeRoleId}`,
  ).join('\r\n')

  const res = await upload(tenant, `username,password,first_name,last_name,role_id\r\n${rows}\r\n`)

  assert.equal(res.statusCode, 200, res.body.slice(0, 500))
  assert.equal(res.json().data.new_users.length, 10_000)
})
