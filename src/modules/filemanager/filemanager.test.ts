import assert from 'node:assert/strict'
import { test } from 'node:test'
import { issueGrantToken } from '../shared-items/index.js'
import { buildTestApp, call, testSecrets } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { fixture, multipart } from '../../../test/fixtures/users/forms.js'

const db = testDb()
const png = fixture('pixel.png')
const NAME = 'Bericht über Ärger (Q1).png'

async function upload(
  token: string,
  fields: Record<string, string> = {},
  files: Parameters<typeof multipart>[1] = { file: { bytes: png, filename: NAME, contentType: 'text/plain' } },
) {
  const body = multipart(fields, files)
  return call(await buildTestApp(), token, {
    method: 'POST',
    url: '/api/filemanager/files',
    payload: body.payload,
    headers: body.headers,
  })
}

async function uploaded(tenant: GivenTenant) {
  const res = await upload(tenant.adminToken)
  assert.equal(res.statusCode, 201, res.body)
  return res.json() as { id: number; name: string; size: number; media_type: string; has_poster: boolean }
}

test('an upload keeps the bytes and takes its type from the magic bytes, not the client', async () => {
  const tenant = await given.tenant(db)
  const file = await uploaded(tenant)
  assert.deepEqual(
    { name: file.name, size: file.size, media_type: file.media_type, has_poster: file.has_poster },
    { name: NAME, size: png.length, media_type: 'image/png', has_poster: false },
  )
  const events = await db
    .selectFrom('domain_events')
    .select('subject_id')
    .where('tenant_id', '=', tenant.id)
    .where('type', '=', 'filemanagerFile.created')
    .execute()
  assert.deepEqual(
    events.map((e) => Number(e.subject_id)),
    [file.id],
  )
})

const routes = [
  { variant: 'content', disposition: 'inline' },
  { variant: 'download', disposition: 'attachment' },
]

for (const { variant, disposition } of routes) {
  test(`GET …/${variant} serves the exact bytes with type, RFC 6266 disposition, nosniff and ranges`, async () => {
    const app = await buildTestApp()
    const tenant = await given.tenant(db)
    const employee = await given.user(db, tenant)
    const file = await uploaded(tenant)
    const url = `/api/filemanager/files/${file.id}/${variant}`

    const full = await call(app, employee.token, { method: 'GET', url })
    assert.equal(full.statusCode, 200)
    assert.deepEqual(full.rawPayload, png)
    assert.equal(full.headers['content-type'], 'image/png')
    assert.equal(full.headers['x-content-type-options'], 'nosniff')
    assert.equal(
      full.headers['content-disposition'],
      `${disposition}; filename="Bericht _ber _rger (Q1).png"; filename*=UTF-8''Bericht%20%C3%BCber%20%C3%84rger%20%28Q1%29.png`,
    )
    assert.equal(full.headers['accept-ranges'], 'bytes')

    const part = await call(app, employee.token, { method: 'GET', url, headers: { range: 'bytes=2-9' } })
    assert.equal(part.statusCode, 206)
    assert.deepEqual(part.rawPayload, png.subarray(2, 10))
    assert.equal(part.headers['content-range'], `bytes 2-9/${png.length}`)
    const suffix = await call(app, employee.token, { method: 'GET', url, headers: { range: 'bytes=-4' } })
    assert.deepEqual(suffix.rawPayload, png.subarray(png.length - 4))

    const beyond = await call(app, employee.token, { method: 'GET', url, headers: { range: `bytes=${png.length}-` } })
    assert.equal(beyond.statusCode, 416)
    assert.equal(beyond.headers['content-range'], `bytes */${png.length}`)
  })
}

test('the poster route serves an image poster, and 404 without one', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const plain = await uploaded(tenant)
  assert.equal(
    (await call(app, tenant.adminToken, { method: 'GET', url: `/api/filemanager/files/${plain.id}/poster` }))
      .statusCode,
    404,
  )
  const withPoster = await upload(
    tenant.adminToken,
    { name: 'video.bin' },
    {
      file: { bytes: Buffer.from('not really a video') },
      poster: { bytes: fixture('pixel.gif'), filename: 'p.png', contentType: 'image/png' },
    },
  )
  assert.equal(withPoster.statusCode, 201, withPoster.body)
  assert.equal(withPoster.json().media_type, 'application/octet-stream')
  const poster = await call(app, tenant.adminToken, {
    method: 'GET',
    url: `/api/filemanager/files/${withPoster.json().id}/poster`,
  })
  assert.equal(poster.statusCode, 200)
  assert.equal(poster.headers['content-type'], 'image/gif')
  assert.deepEqual(poster.rawPayload, fixture('pixel.gif'))
  const notImage = await upload(
    tenant.adminToken,
    {},
    { file: { bytes: png }, poster: { bytes: Buffer.from('<svg/>') } },
  )
  assert.equal(notImage.statusCode, 422)
  assert.ok(notImage.json().errors.poster)
})

test('upload without a file is 422, oversize is 413, and neither creates a record', async () => {
  const tenant = await given.tenant(db)
  const missing = await upload(tenant.adminToken, { name: 'x' }, {})
  assert.equal(missing.statusCode, 422)
  assert.ok(missing.json().errors.file)
  const big = await upload(tenant.adminToken, {}, { file: { bytes: Buffer.alloc(10 * 1024 * 1024 + 1) } })
  assert.equal(big.statusCode, 413)
  const rows = await db
    .selectFrom('filemanager_files' as never)
    .select('id' as never)
    .where('tenant_id' as never, '=', tenant.id as never)
    .execute()
  assert.equal(rows.length, 0)
})

test('file access: module permission, directory grants, other tenant, and a grant token for exactly one file', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const employee = await given.user(db, tenant)
  const noModule = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['users.view']) })
  const directory = (
    await call(app, tenant.adminToken, { method: 'POST', url: '/api/filemanager/directories', payload: { name: 'HR' } })
  ).json()
  const inDirectory = await upload(tenant.adminToken, { directory_id: String(directory.id) })
  assert.equal(inDirectory.statusCode, 201, inDirectory.body)
  const file = inDirectory.json()
  const other = await uploaded(tenant)
  const content = (id: number) => `/api/filemanager/files/${id}/content`

  assert.equal((await call(app, noModule.token, { method: 'GET', url: content(file.id) })).statusCode, 403)
  assert.equal((await call(app, undefined, { method: 'GET', url: content(file.id) })).statusCode, 401)
  await given.grant(db, tenant, {
    key: 'view',
    to: ['user', tenant.adminId],
    on: ['filemanagerDirectory', directory.id],
  })
  assert.equal((await call(app, employee.token, { method: 'GET', url: content(file.id) })).statusCode, 404)
  assert.equal(
    (await call(app, employee.token, { method: 'GET', url: `/api/filemanager/files/${file.id}` })).statusCode,
    404,
  )
  assert.deepEqual(
    (await call(app, employee.token, { method: 'GET', url: '/api/filemanager/files' }))
      .json()
      .map((f: { id: number }) => f.id),
    [other.id],
  )
  const stranger = await given.tenant(db)
  assert.equal((await call(app, stranger.adminToken, { method: 'GET', url: content(file.id) })).statusCode, 404)

  // a redirectWithGrantToken shared item that the user may view → a token for exactly this file
  const item = await db
    .insertInto('shared_items')
    .values({
      tenant_id: tenant.id,
      user_id: tenant.adminId,
      type: 'filemanagerFile',
      redirect_type: 'redirectWithGrantToken',
      targetable_type: 'filemanagerFile',
      targetable_id: String(file.id),
      config: '{}',
    } as never)
    .returning('id')
    .executeTakeFirstOrThrow()
  const token = await issueGrantToken(db, {
    issuer: 'http://api.test',
    tenantSlug: tenant.slug,
    userId: noModule.id,
    sharedItemId: item.id,
    alias: 'filemanagerFile',
    id: file.id,
    secrets: testSecrets(),
  })
  const opened = await call(app, undefined, { method: 'GET', url: `${content(file.id)}?grant_token=${token}` })
  assert.equal(opened.statusCode, 200, opened.body)
  assert.deepEqual(opened.rawPayload, png)
  assert.equal(
    (await call(app, undefined, { method: 'GET', url: `/api/filemanager/files/${file.id}?grant_token=${token}` }))
      .statusCode,
    200,
  )
  assert.equal(
    (await call(app, undefined, { method: 'GET', url: `${content(other.id)}?grant_token=${token}` })).statusCode,
    401,
  )
  assert.equal(
    (await call(app, undefined, { method: 'GET', url: `${content(file.id)}?grant_token=${token}x` })).statusCode,
    401,
  )

  // delete: bytes and record go; a non-empty directory is refused
  assert.equal(
    (await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/filemanager/directories/${directory.id}` }))
      .statusCode,
    409,
  )
  assert.equal(
    (await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/filemanager/files/${file.id}` })).statusCode,
    204,
  )
  assert.equal((await call(app, tenant.adminToken, { method: 'GET', url: content(file.id) })).statusCode, 404)
  assert.equal(
    (await call(app, tenant.adminToken, { method: 'DELETE', url: `/api/filemanager/directories/${directory.id}` }))
      .statusCode,
    204,
  )
})
