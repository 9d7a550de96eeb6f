import assert from 'node:assert/strict'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { after, test } from 'node:test'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { fixture, multipart } from '../../../test/fixtures/users/forms.js'

// this file counts temporary uploads: a storage of its own, not the one the test files running beside it upload to
process.env.TEST_STORAGE_DIR = await fs.mkdtemp(path.join(process.env.TEST_STORAGE_DIR!, 'pictures-'))
const db = testDb()
// a storage directory of this file's own: the temporary-upload counts below must not see the uploads of
// test files running beside it (the run's shared TEST_STORAGE_DIR)
const storageDir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-api-pictures-'))
process.env.TEST_STORAGE_DIR = storageDir
after(() => fs.rm(storageDir, { recursive: true, force: true }))
const storedPicture = (tenantId: number, name: string) =>
  path.join(process.env.TEST_STORAGE_DIR!, 'profile-pictures', String(tenantId), name)
const exists = (file: string) =>
  fs.access(file).then(
    () => true,
    () => false,
  )
const tmpUploads = async () =>
  (await fs.readdir(path.join(process.env.TEST_STORAGE_DIR!, 'tmp-uploads')).catch(() => [])).length
const fields = (roleId: number, username = 'pic.user') => ({
  username,
  password: 'long-enough-1',
  first_name: 'Pic',
  last_name: 'User',
  role_id: String(roleId),
  group_account: 'false',
})

test('multipart create stores a PNG by its bytes (whatever the client claims) and serves it with safe headers', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const viewer = await given.user(db, tenant)
  const body = multipart(fields(tenant.employeeRoleId), {
    profile_picture: { bytes: fixture('pixel.png'), filename: 'x.exe', contentType: 'text/html' },
  })

  const res = await call(app, tenant.adminToken, { method: 'POST', url: '/api/users', ...body })

  assert.equal(res.statusCode, 201, res.body)
  const { id, profile_picture: name } = res.json().data
  assert.match(name, /^[0-9a-f]{32}\.png$/)
  assert.ok(await exists(storedPicture(tenant.id, name)))
  const shown = await call(app, viewer.token, { method: 'GET', url: `/api/users/${id}?selects=profile_picture_url` })
  assert.equal(shown.json().profile_picture_url, `http://api.test/users/${id}/profile-picture/${name}`)
  const picture = await call(app, viewer.token, { method: 'GET', url: `/users/${id}/profile-picture/${name}` })
  assert.equal(picture.statusCode, 200)
  assert.equal(picture.headers['content-type'], 'image/png')
  assert.equal(picture.headers['x-content-type-options'], 'nosniff')
  assert.match(String(picture.headers['cache-control']), /^private/)
  assert.equal(picture.headers['content-disposition'], `inline; filename="${name}"; filename*=UTF-8''${name}`)
  assert.deepEqual(picture.rawPayload, fixture('pixel.png'))
  const withoutName = await call(app, viewer.token, { method: 'GET', url: `/users/${id}/profile-picture` })
  assert.equal(withoutName.statusCode, 200)
  assert.equal(await tmpUploads(), 0, 'no temporary upload is left behind')
})

test('the picture route needs a token, self or users.view, the stored name, and the same tenant', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const otherTenant = await given.tenant(db)
  const noView = await given.user(db, tenant, { roleId: await given.role(db, tenant, []) })
  const created = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart(fields(tenant.employeeRoleId), {
      profile_picture: { bytes: fixture('pixel.gif'), filename: 'a.gif' },
    }),
  })
  const { id, profile_picture: name } = created.json().data
  const url = `/users/${id}/profile-picture/${name}`

  assert.equal((await app.inject({ method: 'GET', url })).statusCode, 401)
  assert.equal((await call(app, noView.token, { method: 'GET', url })).statusCode, 403)
  assert.equal((await call(app, otherTenant.adminToken, { method: 'GET', url })).statusCode, 404)
  assert.equal(
    (await call(app, tenant.adminToken, { method: 'GET', url: `/users/${id}/profile-picture/other.gif` })).statusCode,
    404,
  )
  assert.equal(
    (await call(app, tenant.adminToken, { method: 'GET', url: `/users/${noView.id}/profile-picture` })).statusCode,
    404,
  )
  const gif = await call(app, tenant.adminToken, { method: 'GET', url })
  assert.equal(gif.headers['content-type'], 'image/gif')
})

test('SVG, HTML renamed to .png and non-images are refused with 422 and nothing is stored', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const files = [
    { bytes: fixture('evil.svg'), filename: 'evil.svg', contentType: 'image/svg+xml' },
    { bytes: fixture('page-renamed.png'), filename: 'x.png', contentType: 'image/png' },
    { bytes: Buffer.from('just text'), filename: 'x.jpg', contentType: 'image/jpeg' },
  ]
  for (const file of files) {
    const res = await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/users',
      ...multipart(fields(tenant.employeeRoleId), { profile_picture: file }),
    })
    assert.equal(res.statusCode, 422, file.filename)
    assert.deepEqual(Object.keys(res.json().errors), ['profile_picture'])
  }
  assert.equal((await db.selectFrom('users').select('id').where('tenant_id', '=', tenant.id).execute()).length, 1)
  assert.equal(
    (await fs.readdir(path.join(process.env.TEST_STORAGE_DIR!, 'profile-pictures', String(tenant.id))).catch(() => []))
      .length,
    0,
  )
})

test('a polyglot GIF is served only as image/gif with nosniff and a sandbox CSP', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const created = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart(fields(tenant.employeeRoleId), {
      profile_picture: { bytes: fixture('polyglot.gif'), filename: 'p.html', contentType: 'text/html' },
    }),
  })

  const res = await call(app, tenant.adminToken, {
    method: 'GET',
    url: `/users/${created.json().data.id}/profile-picture`,
  })

  assert.equal(res.headers['content-type'], 'image/gif')
  assert.equal(res.headers['x-content-type-options'], 'nosniff')
  assert.match(String(res.headers['content-security-policy']), /sandbox/)
})

test('a picture over 5 MiB is 413, two files are 413, a malformed body is 400, __proto__ is 400', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const big = Buffer.concat([fixture('pixel.png'), Buffer.alloc(5 * 1024 * 1024 + 1 - fixture('pixel.png').length)])

  const tooBig = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart(fields(tenant.employeeRoleId), { profile_picture: { bytes: big, filename: 'big.png' } }),
  })
  const twoFiles = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart(fields(tenant.employeeRoleId), {
      profile_picture: { bytes: fixture('pixel.png') },
      other: { bytes: fixture('pixel.png') },
    }),
  })
  const boundary = 'XBOUNDARY'
  const malformed = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload: `--${boundary}\r\nContent-Disposition: form-data; name="username"\r\n\r\nabc`,
  })
  const noBoundary = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    headers: { 'content-type': 'multipart/form-data' },
    payload: 'garbage',
  })
  const proto = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart({ ...fields(tenant.employeeRoleId), __proto__x: '1' }),
  })
  const protoField = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart({}, Object.fromEntries([['__proto__', { bytes: fixture('pixel.png') }]])),
  })

  assert.equal(tooBig.statusCode, 413)
  assert.equal(tooBig.headers['content-type'], 'application/problem+json')
  assert.equal(twoFiles.statusCode, 413)
  assert.equal(malformed.statusCode, 400)
  assert.equal(noBoundary.statusCode, 400)
  assert.equal(proto.statusCode, 422, 'an unknown text field is rejected by the schema')
  assert.equal(protoField.statusCode, 400)
  assert.equal((await db.selectFrom('users').select('id').where('tenant_id', '=', tenant.id).execute()).length, 1)
  assert.equal(await tmpUploads(), 0)
})

test('multipart fields are validated and coerced like JSON; a text profile_picture is refused', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)

  const badBoolean = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart({ ...fields(tenant.employeeRoleId), group_account: 'maybe' }),
  })
  const textPicture = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart({ ...fields(tenant.employeeRoleId), profile_picture: 'http://evil/x.png' }),
  })
  const plain = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart({ ...fields(tenant.employeeRoleId), active: '0' }),
  })

  assert.equal(badBoolean.statusCode, 422)
  assert.ok(badBoolean.json().errors.group_account)
  assert.equal(textPicture.statusCode, 422)
  assert.ok(textPicture.json().errors.profile_picture)
  assert.equal(plain.statusCode, 201)
  assert.equal(plain.json().data.active, false)
})

test('PUT replaces a picture (old file deleted) and profile_picture null removes it and its file', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const me = await given.user(db, tenant)
  const first = await call(app, me.token, {
    method: 'PUT',
    url: `/api/users/${me.id}`,
    ...multipart({ city: 'Bonn' }, { profile_picture: { bytes: fixture('pixel.png'), filename: 'a.png' } }),
  })
  const firstName = first.json().data.profile_picture

  const second = await call(app, me.token, {
    method: 'PUT',
    url: `/api/users/${me.id}`,
    ...multipart({}, { profile_picture: { bytes: fixture('pixel.gif'), filename: 'b.gif' } }),
  })
  const secondName = second.json().data.profile_picture
  const removed = await call(app, me.token, {
    method: 'PUT',
    url: `/api/users/${me.id}`,
    payload: { profile_picture: null },
  })

  assert.equal(first.statusCode, 200)
  assert.match(secondName, /\.gif$/)
  assert.equal(await exists(storedPicture(tenant.id, firstName)), false)
  assert.equal(removed.json().data.profile_picture, null)
  assert.equal(await exists(storedPicture(tenant.id, secondName)), false)
  assert.equal(
    (await db.selectFrom('users').select('city').where('id', '=', me.id).executeTakeFirstOrThrow()).city,
    'Bonn',
  )
})

test('a failed multipart create (taken username) keeps no picture file', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  await given.user(db, tenant, { username: 'pic.user' })

  const res = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart(fields(tenant.employeeRoleId), { profile_picture: { bytes: fixture('pixel.png') } }),
  })

  assert.equal(res.statusCode, 409)
  assert.equal(
    (await fs.readdir(path.join(process.env.TEST_STORAGE_DIR!, 'profile-pictures', String(tenant.id))).catch(() => []))
      .length,
    0,
  )
})

test('OpenAPI documents the JSON and multipart bodies of user create', async () => {
  const app = await buildTestApp()

  const spec = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()

  const content = spec.paths['/api/users'].post.requestBody.content
  assert.deepEqual(Object.keys(content).sort(), ['application/json', 'multipart/form-data'])
  assert.equal(content['multipart/form-data'].schema.properties.profile_picture.format, 'binary')
  assert.ok(spec.paths['/api/users/csv'].post.requestBody.content['multipart/form-data'])
  assert.ok(spec.paths['/api/users/{id}'].put.responses['200'])
})
