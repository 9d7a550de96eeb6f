import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.js'
import { createWorkplaceClient, serializeQuery } from '../clients/typescript/index.js'
import { staleClientFiles } from '../scripts/openapi-client.js'
import { testConfig } from './helpers/build-test-app.js'
import { given, TEST_PASSWORD } from './helpers/given.js'
import { testDb } from './helpers/test-database.js'
import { gradientPng } from '../src/modules/tenants/demo-files.js'

// The committed client (clients/typescript) against a listening server on 127.0.0.1.
let app: FastifyInstance
let baseUrl: string
const db = testDb()

before(async () => {
  app = await buildApp({ config: testConfig(), db })
  await app.listen({ port: 0, host: '127.0.0.1' })
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
})
after(async () => {
  await app?.close()
})

test('the committed OpenAPI document and client types are what the routes produce (npm run openapi:check)', async () => {
  assert.deepEqual(await staleClientFiles(), [], 'run `npm run openapi:generate` and commit the result')
})

test('query conventions serialise to the nested bracket keys the server parses', () => {
  assert.equal(
    serializeQuery({ selects: 'id,name', filter: { read_at: { null: true }, id: { in: [1, 2] } }, limit: 2 }),
    'selects=id%2Cname&filter[read_at][null]=true&filter[id][in]=1,2&limit=2',
  )
})

test('the typed client logs in, lists with query conventions, updates a notification and uploads a file', async () => {
  const tenant = await given.tenant(db)
  const anna = await given.user(db, tenant, { username: 'anna.client', first_name: 'Anna', roleId: tenant.adminRoleId })
  await given.user(db, tenant, { username: 'ben.client', first_name: 'Ben' })
  const notificationId = await given.notification(db, tenant, anna.id)
  const api = createWorkplaceClient({ baseUrl })

  const refused = await api.POST('/api/auth/login', {
    body: { tenant: tenant.slug, username: 'anna.client', password: 'wrong-password' },
  })
  assert.equal(refused.response.status, 401)
  assert.equal(refused.error?.code, 'invalid_credentials')
  const login = await api.POST('/api/auth/login', {
    body: { tenant: tenant.slug, username: 'anna.client', password: TEST_PASSWORD },
  })
  assert.equal(login.response.status, 200, JSON.stringify(login.error))
  api.useToken(login.data!.access_token)

  const users = await api.GET('/api/users', {
    params: {
      query: {
        selects: 'id,username',
        filter: { username: { in: ['anna.client', 'ben.client', 'admin'] } },
        sort: '-username',
        limit: 5,
      },
    },
  })
  assert.equal(users.response.status, 200, JSON.stringify(users.error))
  assert.deepEqual(
    users.data!.map((u) => u.username),
    ['ben.client', 'anna.client', 'admin'],
  )
  assert.deepEqual(Object.keys(users.data![0]).sort(), ['id', 'username'])

  const unread = () => api.GET('/api/notifications', { params: { query: { filter: { read_at: { null: 'true' } } } } })
  assert.equal((await unread()).data!.length, 1)
  const marked = await api.PUT('/api/notifications/{id}', {
    params: { path: { id: notificationId } },
    body: { read_at: '2026-01-02 03:04:05' },
  })
  assert.equal(marked.response.status, 200, JSON.stringify(marked.error))
  assert.equal(marked.data!.data.read_at, '2026-01-02 03:04:05')
  assert.equal((await unread()).data!.length, 0)

  const upload = await api.POST('/api/filemanager/files', {
    body: { name: 'Picture.png', file: new Blob([new Uint8Array(gradientPng(8, 8, [0, 0, 0], [255, 255, 255]))]) },
    bodySerializer: (body) => {
      const form = new FormData()
      for (const [key, value] of Object.entries(body)) {
        if (value instanceof Blob) form.append(key, value, 'picture.png')
        else form.append(key, String(value))
      }
      return form
    },
  })
  assert.equal(upload.response.status, 201, JSON.stringify(upload.error))
  assert.equal(upload.data!.media_type, 'image/png')
  const content = await api.GET('/api/filemanager/files/{id}/content', {
    params: { path: { id: upload.data!.id! } },
    parseAs: 'arrayBuffer',
  })
  assert.equal(content.response.headers.get('content-type'), 'image/png')
  assert.equal(content.data!.byteLength, upload.data!.size)
})
