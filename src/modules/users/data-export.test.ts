import assert from 'node:assert/strict'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { after, test } from 'node:test'
import { sql } from 'kysely'
import pino from 'pino'
import yauzl from 'yauzl'
import { buildTestApp, call, testConfig } from '../../../test/helpers/build-test-app.js'
import { given, TEST_PASSWORD } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { fixture, multipart } from '../../../test/fixtures/users/forms.js'
import { createDataExports, type DataExportJobPayload } from './users-data-export.js'
import { createFileStorage } from '../../platform/storage/file-storage.js'

const storageDir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-api-exports-'))
process.env.TEST_STORAGE_DIR = storageDir
after(() => fs.rm(storageDir, { recursive: true, force: true }))
const db = testDb()
const exportsService = () =>
  createDataExports({ db, config: testConfig(), log: pino({ level: 'silent' }) }, createFileStorage(storageDir))

/** Runs the queued export jobs of `exportId` as the worker would. */
async function runExportJob(exportId: number) {
  const { rows } = await sql<{ payload: DataExportJobPayload }>`
    select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'users:data_export' and j.key = ${`users:data_export:${exportId}`}`.execute(db)
  assert.equal(rows.length, 1, 'one queued job')
  await exportsService().build(rows[0]!.payload)
}

/** The entries of a ZIP: name → text. */
function unzip(bytes: Buffer): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    const entries = new Map<string, Buffer>()
    yauzl.fromBuffer(bytes, { lazyEntries: true }, (error, zip) => {
      if (error) return reject(error)
      zip.on('entry', (entry: yauzl.Entry) =>
        zip.openReadStream(entry, (err, stream) => {
          if (err) return reject(err)
          const chunks: Buffer[] = []
          stream.on('data', (c: Buffer) => chunks.push(c))
          stream.on('end', () => {
            entries.set(entry.fileName, Buffer.concat(chunks))
            zip.readEntry()
          })
        }),
      )
      zip.on('end', () => resolve(entries))
      zip.readEntry()
    })
  })
}

const linkPath = (url: string) => new URL(url).pathname
/** A `YYYY-MM-DD HH:MM:SS` time of the API (UTC) in milliseconds. */
const utc = (time: string) => new Date(`${time.replace(' ', 'T')}Z`).getTime()

test('a person exports their data: 202, job, ready, single-use link, a ZIP with every file', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const department = await given.department(db, tenant, [])
  const created = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/users',
    ...multipart(
      {
        username: 'export.person',
        password: TEST_PASSWORD,
        first_name: 'Erika',
        last_name: 'Export',
        role_id: String(tenant.employeeRoleId),
        group_account: 'false',
        email: 'erika@example.com',
        city: 'Köln',
      },
      { profile_picture: { bytes: fixture('pixel.png'), filename: 'me.png', contentType: 'image/png' } },
    ),
  })
  assert.equal(created.statusCode, 201, created.body)
  const person: number = created.json().data.id
  await db
    .insertInto('department_users')
    .values({ tenant_id: tenant.id, department_id: department, user_id: person })
    .execute()
  const login = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: 'export.person', password: TEST_PASSWORD, device_name: 'Erika phone' },
    headers: { 'user-agent': 'ErikaBrowser/1.0' },
  })
  const token: string = login.json().access_token
  const form = (
    await call(app, tenant.adminToken, { method: 'POST', url: '/api/forms', payload: { name: 'Leave' } })
  ).json()
  assert.equal(
    (await call(app, token, { method: 'POST', url: `/api/forms/${form.id}/messages`, payload: { data: { days: 2 } } }))
      .statusCode,
    201,
  )
  await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/notifications',
    payload: { title: 'Welcome Erika', body: 'Hello', url: '/x', user_ids: [person] },
  })
  await sql`insert into notifications (tenant_id, type, notifiable_type, notifiable_id, targetable_type, targetable_id, source_key, data)
    select ${tenant.id}, 'generic', 'user', ${person}, 'genericNotification', g, 'seed:' || g, jsonb_build_object('title', 'seeded ' || g)
    from generate_series(1, 2500) g`.execute(db)

  const requested = await call(app, token, { method: 'POST', url: '/api/users/current/data-export' })
  assert.equal(requested.statusCode, 202, requested.body)
  const id: number = requested.json().data.id
  assert.equal(requested.json().data.status, 'pending')
  const notReady = await call(app, token, { method: 'POST', url: `/api/data-exports/${id}/download-link` })
  assert.equal(notReady.statusCode, 409)
  assert.equal(notReady.json().code, 'not_ready')

  await runExportJob(id)

  const status = await call(app, token, { method: 'GET', url: `/api/data-exports/${id}` })
  assert.equal(status.statusCode, 200)
  assert.equal(status.json().data.status, 'ready')
  const expiresIn = utc(status.json().data.expires_at) - Date.now()
  assert.ok(expiresIn > 6.9 * 86400_000 && expiresIn <= 7 * 86400_000, 'kept 7 days')
  // the list answers a ready export with the same times as the export itself (the API's timestamp format)
  const listed = await call(app, token, { method: 'GET', url: '/api/data-exports' })
  assert.equal(listed.statusCode, 200, listed.body)
  const [item] = listed.json()
  assert.equal(item.status, 'ready')
  for (const key of ['created_at', 'ready_at', 'expires_at'] as const) {
    assert.match(item[key], /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/, key)
    assert.equal(item[key], status.json().data[key], key)
  }
  const link = await call(app, token, { method: 'POST', url: `/api/data-exports/${id}/download-link` })
  assert.equal(link.statusCode, 200, link.body)
  const linkExpiresIn = utc(link.json().data.expires_at) - Date.now()
  assert.ok(linkExpiresIn > 9 * 60_000 && linkExpiresIn <= 10 * 60_000, 'a link works for 10 minutes')

  const download = await app.inject({ method: 'GET', url: linkPath(link.json().data.url) })
  assert.equal(download.statusCode, 200, download.body)
  assert.equal(download.headers['content-type'], 'application/zip')
  const second = await app.inject({ method: 'GET', url: linkPath(link.json().data.url) })
  assert.equal(second.statusCode, 404, 'a link works once')

  const entries = await unzip(download.rawPayload)
  const names = [...entries.keys()]
  for (const name of [
    'README.txt',
    'profile.json',
    'memberships.json',
    'notifications.json',
    'preferences.json',
    'sessions.json',
    'push-subscriptions.json',
    'audit.json',
    'content.json',
  ])
    assert.ok(names.includes(name), name)
  const read = (name: string) => JSON.parse(entries.get(name)!.toString('utf8'))
  const profile = read('profile.json')
  assert.equal(profile.username, 'export.person')
  assert.equal(profile.city, 'Köln')
  assert.equal(profile.password_hash, undefined, 'never the password hash')
  assert.deepEqual(
    read('memberships.json').departments.map((d: { id: number }) => Number(d.id)),
    [department],
  )
  const notifications = read('notifications.json')
  assert.equal(notifications.length, 2501)
  assert.equal(new Set(notifications.map((n: { id: string }) => n.id)).size, 2501, 'every page once')
  const sessions = read('sessions.json')
  assert.equal(sessions[0].device_name, 'Erika phone')
  assert.equal(sessions[0].user_agent, 'ErikaBrowser/1.0')
  assert.ok(!entries.get('sessions.json')!.toString().includes('token_hash'))
  assert.deepEqual(
    read('content.json').form_messages.map((m: { data: unknown }) => m.data),
    [{ days: 2 }],
  )
  assert.ok(read('audit.json').some((a: { action: string }) => a.action === 'user.create'))
  assert.ok(names.some((n) => n.startsWith('files/profile-picture/')))
  assert.match(entries.get('README.txt')!.toString(), /notifications\.json/)

  // the person is told
  const inbox = await db
    .selectFrom('notifications')
    .select('type')
    .where('tenant_id', '=', tenant.id)
    .where('notifiable_id', '=', person)
    .where('type', '=', 'dataExportReady')
    .execute()
  assert.equal(inbox.length, 0, 'queued, delivered by the fan-out job')
  const { rows: fanOut } = await sql<{ n: number }>`
    select count(*)::int as n from graphile_worker._private_jobs where key = ${`notifications:fan_out:dataExport:${id}:ready`}`.execute(
    db,
  )
  assert.equal(fanOut[0]!.n, 1)
})

test("another user's export is refused without an oracle; an administrator needs users.export", async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const alice = await given.user(db, tenant)
  const bob = await given.user(db, tenant)
  const exporter = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['users.export']) })

  const own = (await call(app, alice.token, { method: 'POST', url: '/api/users/current/data-export' })).json().data.id
  const peek = await call(app, bob.token, { method: 'GET', url: `/api/data-exports/${own}` })
  const missing = await call(app, bob.token, { method: 'GET', url: '/api/data-exports/999999999' })
  const link = await call(app, bob.token, { method: 'POST', url: `/api/data-exports/${own}/download-link` })
  const forOther = await call(app, bob.token, { method: 'POST', url: `/api/users/${alice.id}/data-export` })
  const byExporter = await call(app, exporter.token, { method: 'POST', url: `/api/users/${alice.id}/data-export` })
  const otherTenant = await given.tenant(db)
  const acrossTenants = await call(app, otherTenant.adminToken, { method: 'GET', url: `/api/data-exports/${own}` })

  assert.equal(peek.statusCode, 404)
  // the same answer as for an export that does not exist (status, code, title, detail)
  const problem = (res: typeof peek) => {
    const { status, code, title, detail } = res.json<{ status: number; code: string; title: string; detail: string }>()
    return { status, code, title, detail }
  }
  assert.deepEqual(problem(peek), problem(missing))
  assert.equal(link.statusCode, 404)
  assert.equal(forOther.statusCode, 403)
  assert.equal(byExporter.statusCode, 202, byExporter.body)
  assert.equal(byExporter.json().data.user_id, alice.id)
  assert.equal(acrossTenants.statusCode, 404)
  const seenByExporter = await call(app, exporter.token, { method: 'GET', url: `/api/data-exports/${own}` })
  assert.equal(seenByExporter.statusCode, 200)
})

test('the list of data exports: everyone sees their own and those they asked for, users.export sees the tenant', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const alice = await given.user(db, tenant)
  const bob = await given.user(db, tenant)
  const exporter = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['users.export']) })
  const request = async (token: string, url: string) => (await call(app, token, { method: 'POST', url })).json().data.id
  const alicesOwn = await request(alice.token, '/api/users/current/data-export')
  const bobsOwn = await request(bob.token, '/api/users/current/data-export')
  const aboutBob = await request(exporter.token, `/api/users/${bob.id}/data-export`)
  const elsewhere = await given.tenant(db)
  await request(elsewhere.adminToken, '/api/users/current/data-export')

  const ids = async (token: string, query = '') => {
    const res = await call(app, token, { method: 'GET', url: `/api/data-exports${query}` })
    assert.equal(res.statusCode, 200, res.body)
    return res.json<Array<{ id: number }>>().map((e) => e.id)
  }
  assert.deepEqual(await ids(alice.token), [alicesOwn])
  assert.deepEqual(await ids(bob.token), [aboutBob, bobsOwn], 'newest first; the one about bob is his too')
  assert.deepEqual(await ids(exporter.token), [aboutBob, bobsOwn, alicesOwn], 'the tenant, not the other one')
  assert.deepEqual(await ids(exporter.token, `?filter[user_id]=${alice.id}`), [alicesOwn])
  const [first] = (await call(app, exporter.token, { method: 'GET', url: '/api/data-exports?limit=1' })).json()
  assert.deepEqual(Object.keys(first).sort(), [
    'created_at',
    'expires_at',
    'id',
    'ready_at',
    'requested_by',
    'size',
    'status',
    'user_id',
  ])
  assert.equal(first.requested_by, exporter.id)
  assert.equal(first.status, 'pending')
  const bad = await call(app, exporter.token, { method: 'GET', url: '/api/data-exports?sort=secret' })
  assert.equal(bad.statusCode, 422, 'an unknown sort field is refused, naming the field')
  assert.match(bad.body, /sort/)
})

test('a download link expires; a wrong or forged token answers 404; archives past 7 days are deleted', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const person = await given.user(db, tenant)
  const id = (await call(app, person.token, { method: 'POST', url: '/api/users/current/data-export' })).json().data.id
  await runExportJob(id)
  const url = linkPath(
    (await call(app, person.token, { method: 'POST', url: `/api/data-exports/${id}/download-link` })).json().data.url,
  )
  await db
    .updateTable('data_exports')
    .set({ link_expires_at: sql<string>`now() - interval '1 second'` })
    .where('tenant_id', '=', tenant.id)
    .where('id', '=', id)
    .execute()
  assert.equal((await app.inject({ method: 'GET', url })).statusCode, 404, 'an expired link')
  const forged = url.replace(/[A-Za-z0-9_-]{10}$/, 'AAAAAAAAAA')
  assert.equal((await app.inject({ method: 'GET', url: forged })).statusCode, 404)
  assert.equal((await app.inject({ method: 'GET', url: '/api/data-exports/download/garbage' })).statusCode, 404)

  const row = await db
    .selectFrom('data_exports')
    .select('file_name')
    .where('tenant_id', '=', tenant.id)
    .where('id', '=', id)
    .executeTakeFirstOrThrow()
  const file = path.join(storageDir, 'data-exports', String(tenant.id), row.file_name!)
  await fs.access(file)
  await db
    .updateTable('data_exports')
    .set({ expires_at: sql<string>`now() - interval '1 second'` })
    .where('tenant_id', '=', tenant.id)
    .where('id', '=', id)
    .execute()
  assert.ok((await exportsService().sweep()) >= 1)
  await assert.rejects(fs.access(file))
  const status = await call(app, person.token, { method: 'GET', url: `/api/data-exports/${id}` })
  assert.equal(status.json().data.status, 'expired')
  assert.equal(
    (await call(app, person.token, { method: 'POST', url: `/api/data-exports/${id}/download-link` })).statusCode,
    409,
  )
})

test('an upload whose bytes are gone from storage is named in files/MISSING.txt; the export still completes', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const alice = await given.user(db, tenant)
  await sql`insert into filemanager_files (tenant_id, user_id, name, size, media_type, storage_name)
    values (${tenant.id}, ${alice.id}, 'lost.pdf', 10, 'application/pdf', 'no-such-stored-file')`.execute(db)
  const requested = await call(app, alice.token, { method: 'POST', url: '/api/users/current/data-export' })
  const id = requested.json().data.id as number
  await runExportJob(id)

  const shown = await call(app, alice.token, { method: 'GET', url: `/api/data-exports/${id}` })
  assert.equal(shown.json().data.status, 'ready', shown.body)
  const link = await call(app, alice.token, { method: 'POST', url: `/api/data-exports/${id}/download-link` })
  const zip = await app.inject({ method: 'GET', url: linkPath(link.json().data.url) })
  assert.equal(zip.statusCode, 200)
  const entries = await unzip(zip.rawPayload)
  assert.match(entries.get('files/MISSING.txt')?.toString('utf8') ?? '', /files\/uploads\/\d+-lost\.pdf/)
  assert.ok(![...entries.keys()].some((name) => name.startsWith('files/uploads/')))
})
