import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import path from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { buildTestApp, call } from './helpers/build-test-app.js'
import { testDatabaseUrl, testDb } from './helpers/test-database.js'
import { resolveDatabaseUrl } from '../src/platform/db/database.js'
import { isMigrated } from '../src/platform/db/migrate.js'

const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '..')
const cli = (args: string[]) =>
  run(process.execPath, [path.join(root, 'bin/workplace.js'), ...args], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: testDatabaseUrl(), LOG_LEVEL: 'silent' },
  })

test('health: live and ready', async () => {
  const app = await buildTestApp()
  assert.deepEqual((await app.inject({ url: '/health/live' })).json(), { status: 'ok' })
  const ready = await app.inject({ url: '/health/ready' })
  assert.equal(ready.statusCode, 200)
  assert.deepEqual(ready.json(), { status: 'ok' })
  assert.equal(await isMigrated(testDb()), true)
})

test('OpenAPI describes the routes from their schemas, and /docs is served offline', async () => {
  const app = await buildTestApp()
  const res = await app.inject({ url: '/api/openapi.json' })
  assert.equal(res.statusCode, 200)
  const doc = res.json()
  assert.equal(doc.openapi, '3.1.0') // issue 19: OpenAPI 3.1
  for (const route of ['/api/auth/login', '/api/users/current', '/api/roles', '/api/roles/{id}', '/api/departments']) {
    assert.ok(doc.paths[route], `documents ${route}`)
  }
  assert.ok(doc.paths['/api/roles'].post.requestBody.content['application/json'].schema.properties.permissions)
  assert.ok(
    doc.paths['/api/roles'].get.responses['4XX'] || doc.paths['/api/roles'].get.responses['4xx'],
    'documents the error shape',
  )
  const docs = await app.inject({ url: '/docs/' })
  assert.equal(docs.statusCode, 200)
  assert.doesNotMatch(
    docs.body,
    /https?:\/\/(?!127\.0\.0\.1|localhost)[a-z0-9.-]+\/[^"']*\.(js|css)/i,
    'no assets from the internet',
  )
})

test('an explicit database URL is used as is (external mode)', async () => {
  const resolved = await resolveDatabaseUrl({ url: 'postgres://u@db.example:5432/x', dataDir: '/nonexistent' })
  assert.equal(resolved.url, 'postgres://u@db.example:5432/x')
})

test('CLI: tenant create --json prints exactly the contract shape, and the token works', async () => {
  const slug = `cli-${Date.now().toString(36)}`
  const { stdout } = await cli(['tenant', 'create', slug, '--admin-password', 'S3cure-pass', '--json'])
  const printed = JSON.parse(stdout)
  assert.deepEqual(Object.keys(printed), ['tenant', 'admin', 'token'])
  assert.deepEqual(Object.keys(printed.tenant), ['id', 'slug'])
  assert.deepEqual(Object.keys(printed.admin), ['id', 'username'])
  assert.equal(printed.tenant.slug, slug)
  assert.equal(printed.admin.username, 'admin')
  const app = await buildTestApp()
  const me = await call(app, printed.token, { method: 'GET', url: '/api/users/current' })
  assert.equal(me.statusCode, 200)
  assert.equal(me.json().id, printed.admin.id)
  const login = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: slug, username: 'admin', password: 'S3cure-pass' },
  })
  assert.equal(login.statusCode, 200)

  const { stdout: tokenOut } = await cli(['token', 'create', '--tenant', slug, '--username', 'ADMIN', '--json'])
  const { token } = JSON.parse(tokenOut)
  assert.equal((await call(app, token, { method: 'GET', url: '/api/users/current' })).statusCode, 200)

  await assert.rejects(cli(['tenant', 'create', slug, '--json']), /already exists/)
  await assert.rejects(cli(['tenant', 'create', 'Bad Slug!']), /slug/)
})
