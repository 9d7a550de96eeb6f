import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { after, test } from 'node:test'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given, type GivenUser } from '../../../test/helpers/given.js'
import { testDatabaseUrl, testDb } from '../../../test/helpers/test-database.js'
import { fixture, multipart } from '../../../test/fixtures/users/forms.js'
import { createPool } from '../../platform/db/database.js'
import { deleteTenant, exportTenant, importTenant } from './tenant-archive.js'
import { tenantTables } from '../../platform/db/table-classes.js'

const storageDir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-api-offboarding-'))
process.env.TEST_STORAGE_DIR = storageDir
after(() => fs.rm(storageDir, { recursive: true, force: true }))
const db = testDb()
const pool = createPool(testDatabaseUrl(), { max: 2, allowExitOnIdle: true })
after(() => pool.end())

/** Every list endpoint a person of each role reads, with the answers. */
const LISTS = [
  '/api/users/current',
  '/api/users',
  '/api/users/deleted',
  '/api/roles',
  '/api/departments',
  '/api/languages',
  '/api/folders',
  '/api/notifications',
  '/api/notifications/count',
  '/api/notification-settings',
  '/api/users/current/notification-preferences',
  '/api/infoboard/posts',
  '/api/forms',
  '/api/manuals/chapters',
  '/api/calendar/events',
  '/api/tasks/executions',
  '/api/filemanager/files',
  '/api/shared-items',
  '/api/administration/audit-log',
  '/api/administration/retention',
]

async function answers(app: Awaited<ReturnType<typeof buildTestApp>>, people: GivenUser[]) {
  const seen: Record<string, unknown> = {}
  for (const person of people)
    for (const url of LISTS) {
      const res = await call(app, person.token, { method: 'GET', url })
      seen[`${person.username} ${url}`] = { status: res.statusCode, body: res.body }
    }
  return seen
}

test('tenant export → delete → import: every list endpoint answers as before for three roles; counts zero after delete', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const admin: GivenUser = {
    id: tenant.adminId,
    username: 'admin',
    token: tenant.adminToken,
    roleId: tenant.adminRoleId,
  }
  const employee = await given.user(db, tenant)
  const manager = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, ['users.view', 'users.viewDetails', 'infoboard.view', 'infoboard.manage']),
  })
  await given.department(db, tenant, [employee.id, manager.id])
  const channel = await given.folder(db, tenant, { type: 'infoboardChannel' })
  const post = await call(app, manager.token, {
    method: 'POST',
    url: '/api/infoboard/posts',
    payload: { channel_id: channel, title: 'Hello', body: '<p>Welcome</p>' },
  })
  assert.equal(post.statusCode, 201, post.body)
  const form = (await call(app, admin.token, { method: 'POST', url: '/api/forms', payload: { name: 'F' } })).json()
  await call(app, employee.token, {
    method: 'POST',
    url: `/api/forms/${form.id}/messages`,
    payload: { data: { a: 1 } },
  })
  await call(app, admin.token, {
    method: 'POST',
    url: '/api/notifications',
    payload: { title: 'Hi', body: 'all', url: '/x', user_ids: [employee.id, manager.id] },
  })
  const pictured = await call(app, admin.token, {
    method: 'PUT',
    url: `/api/users/${employee.id}`,
    ...multipart({}, { profile_picture: { bytes: fixture('pixel.png'), filename: 'p.png', contentType: 'image/png' } }),
  })
  assert.equal(pictured.statusCode, 200, pictured.body)
  const picture = `/users/${employee.id}/profile-picture`
  const people = [admin, employee, manager]
  const before = await answers(app, people)
  const pictureBefore = (await call(app, admin.token, { method: 'GET', url: picture })).rawPayload

  const archive = path.join(storageDir, '..', `${path.basename(storageDir)}-tenant.zip`)
  after(() => fs.rm(archive, { force: true }))
  const manifest = await exportTenant(pool, storageDir, tenant.slug, createWriteStream(archive))
  assert.equal(manifest.tables.users!.rows, 3)
  assert.ok(Object.keys(manifest.files).some((f) => f.startsWith(`profile-pictures/${tenant.id}/`)))
  assert.deepEqual(Object.keys(manifest.tables).sort(), ['tenants', ...tenantTables()].sort())

  const deleted = await deleteTenant(pool, storageDir, tenant.slug)
  assert.equal(deleted.deleted.users, 3)
  assert.ok(
    Object.values(deleted.remaining).every((n) => n === 0),
    JSON.stringify(deleted.remaining),
  )
  assert.equal((await call(app, employee.token, { method: 'GET', url: '/api/users/current' })).statusCode, 401)

  const imported = await importTenant(pool, storageDir, archive)
  assert.equal(imported.tenant.id, tenant.id)
  assert.deepEqual(
    imported.tables,
    Object.fromEntries(Object.entries(manifest.tables).map(([t, { rows }]) => [t, rows])),
  )

  assert.deepEqual(await answers(app, people), before)
  assert.deepEqual((await call(app, admin.token, { method: 'GET', url: picture })).rawPayload, pictureBefore)
  // new rows get fresh ids after the import (the id sequence moved past the imported ones)
  const created = await call(app, admin.token, { method: 'POST', url: '/api/forms', payload: { name: 'After' } })
  assert.equal(created.statusCode, 201, created.body)
  await assert.rejects(importTenant(pool, storageDir, archive), /exists already/)
})

test('CLI: tenant delete needs --confirm with the same slug; an unknown tenant fails', () => {
  const run = (args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'bin/workplace.js', ...args], {
      env: { ...process.env, DATABASE_URL: testDatabaseUrl(), STORAGE_DIR: storageDir, LOG_LEVEL: 'silent' },
      encoding: 'utf8',
    })
  const unconfirmed = run(['tenant', 'delete', 'nobody', '--confirm', 'other'])
  assert.equal(unconfirmed.status, 2, unconfirmed.stderr)
  assert.match(unconfirmed.stderr, /--confirm/)
  const unknown = run(['tenant', 'delete', 'nobody-here', '--confirm', 'nobody-here'])
  assert.equal(unknown.status, 1, unknown.stderr)
  assert.match(unknown.stderr, /no tenant "nobody-here"/)
})
