import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { after, test } from 'node:test'
import { sql } from 'kysely'
import { buildApp } from '../../app.js'
import { buildTestApp, call, instrumentTestApp, testConfig } from '../../../test/helpers/build-test-app.js'
import { given, type GivenUser } from '../../../test/helpers/given.js'
import { dropDatabase, testDatabaseUrl, testDb } from '../../../test/helpers/test-database.js'
import { fixture, multipart } from '../../../test/fixtures/users/forms.js'
import { createPool, kyselyOn } from '../../platform/db/database.js'
import { ensureDatabase } from '../../platform/db/embedded-postgres.js'
import { migrateToLatest } from '../../platform/db/migrate.js'
import { backupDatabase, restoreDatabase } from './backup.js'
import { entryStream, openZip } from './tenant-archive.js'
import pino from 'pino'
import { loadConfig } from '../../config.js'
import { collectJobs } from '../../runtime.js'
import { DAILY_BACKUP_JOB, dailyBackup } from './index.js'

const storageDir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-api-backup-'))
process.env.TEST_STORAGE_DIR = storageDir
after(() => fs.rm(storageDir, { recursive: true, force: true }))
const db = testDb()
const pool = createPool(testDatabaseUrl(), { max: 2, allowExitOnIdle: true })
after(() => pool.end())

const LISTS = [
  '/api/users/current',
  '/api/users',
  '/api/roles',
  '/api/departments',
  '/api/folders',
  '/api/notifications',
  '/api/infoboard/posts',
  '/api/forms',
  '/api/administration/audit-log',
]

test('backup, then restore into a fresh database and storage directory: the API answers the same', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const admin: GivenUser = {
    id: tenant.adminId,
    username: 'admin',
    token: tenant.adminToken,
    roleId: tenant.adminRoleId,
  }
  const employee = await given.user(db, tenant)
  await given.department(db, tenant, [employee.id])
  await call(app, admin.token, {
    method: 'POST',
    url: '/api/notifications',
    payload: { title: 'Hi', body: 'all', url: '/x', user_ids: [employee.id] },
  })
  await call(app, admin.token, {
    method: 'PUT',
    url: `/api/users/${employee.id}`,
    ...multipart({}, { profile_picture: { bytes: fixture('pixel.png'), filename: 'p.png', contentType: 'image/png' } }),
  })
  const answers = async (target: typeof app) => {
    const seen: Record<string, unknown> = {}
    for (const person of [admin, employee])
      for (const url of [...LISTS, `/users/${employee.id}/profile-picture`]) {
        const res = await call(target, person.token, { method: 'GET', url })
        seen[`${person.username} ${url}`] = { status: res.statusCode, body: res.body }
      }
    return seen
  }
  const before = await answers(app)

  const backups = path.join(storageDir, '..', `${path.basename(storageDir)}-backups`)
  after(() => fs.rm(backups, { recursive: true, force: true }))
  const file = await backupDatabase(pool, storageDir, backups)
  assert.match(path.basename(file), /^workplace-backup-.*\.zip$/)

  // a fresh database on the same server, migrated, and a fresh storage directory
  const name = `wp_restore_${randomBytes(4).toString('hex')}`
  const url = new URL(testDatabaseUrl())
  url.pathname = `/${name}`
  await ensureDatabase(url.toString(), name)
  const freshPool = createPool(url.toString(), { max: 4, allowExitOnIdle: true })
  const freshDb = kyselyOn(freshPool)
  after(async () => {
    await freshDb.destroy().catch(() => undefined)
    await dropDatabase(url.toString(), name)
  })
  await migrateToLatest(freshDb, freshPool)
  const freshStorage = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-api-restored-'))
  after(() => fs.rm(freshStorage, { recursive: true, force: true }))
  await restoreDatabase(freshPool, freshStorage, file)

  const restored = await instrumentTestApp(
    await buildApp({
      config: testConfig({ DATABASE_URL: url.toString(), STORAGE_DIR: freshStorage }),
      db: freshDb,
    }),
  )
  after(() => restored.close())
  assert.deepEqual(await answers(restored), before)
  await assert.rejects(restoreDatabase(freshPool, freshStorage, file), /has tenants already/)
})

test('a backup killed with SIGKILL while writing leaves no file that looks complete', async () => {
  // enough rows that the backup takes a moment
  const tenant = await given.tenant(db)
  await sql`insert into notifications (tenant_id, type, notifiable_type, notifiable_id, targetable_type, targetable_id, source_key, data)
    select ${tenant.id}, 'generic', 'user', ${tenant.adminId}, 'x', g, 'bulk:' || g, jsonb_build_object('title', repeat('x', 200) || g)
    from generate_series(1, 150000) g`.execute(db)
  const dir = path.join(storageDir, '..', `${path.basename(storageDir)}-killed`)
  after(() => fs.rm(dir, { recursive: true, force: true }))
  await fs.mkdir(dir, { recursive: true })
  const child = spawn(process.execPath, ['bin/workplace.js', 'backup', '--to', dir], {
    env: { ...process.env, DATABASE_URL: testDatabaseUrl(), STORAGE_DIR: storageDir, LOG_LEVEL: 'silent' },
    stdio: 'ignore',
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  // kill once the file being written (whatever its name) holds some bytes
  let partialSeen = false
  for (let i = 0; i < 2000 && !partialSeen; i++) {
    for (const name of await fs.readdir(dir))
      if ((await fs.stat(path.join(dir, name))).size > 64 * 1024) partialSeen = true
    if (!partialSeen) await new Promise((r) => setTimeout(r, 10))
  }
  child.kill('SIGKILL')
  await exited
  assert.ok(partialSeen, 'the backup was killed mid-write')
  const names = await fs.readdir(dir)
  assert.deepEqual(
    names.filter((n) => n.endsWith('.zip')),
    [],
    'no complete-looking backup',
  )
  assert.equal(names.filter((n) => n.endsWith('.zip.partial')).length, 1)
  // the partial file is not a readable archive either
  await assert.rejects(openZip(path.join(dir, names[0]!)))
  await sql`delete from notifications where tenant_id = ${tenant.id}`.execute(db)
})

test('the daily backup (BACKUP_DAILY): off by default; on, the worker job writes a complete backup and keeps BACKUP_KEEP', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-api-daily-'))
  after(() => fs.rm(dir, { recursive: true, force: true }))
  const base = testConfig()
  const deps = (daily: boolean) => ({
    db,
    log: pino({ level: 'silent' }),
    databaseUrl: testDatabaseUrl(),
    config: { ...base, storageDir, backup: { dir, keep: 1, daily } },
  })
  assert.equal(loadConfig({}).backup.daily, false, 'off unless the operator sets BACKUP_DAILY')
  assert.equal(loadConfig({ BACKUP_DAILY: 'true' }).backup.daily, true)
  assert.match(collectJobs(deps(true)).cron, new RegExp(`^15 2 \\* \\* \\* ${DAILY_BACKUP_JOB}$`, 'm'))
  const job = collectJobs(deps(false)).handlers[DAILY_BACKUP_JOB]
  assert.ok(job, 'the job is registered')

  assert.equal(await dailyBackup(deps(false)), undefined)
  assert.deepEqual(await fs.readdir(dir), [], 'nothing written while off')
  const first = await dailyBackup(deps(true))
  const second = await dailyBackup(deps(true))
  assert.ok(first && second && first !== second)
  assert.deepEqual(await fs.readdir(dir), [path.basename(second)], 'the newest BACKUP_KEEP=1 kept')
  const { zip, entries } = await openZip(second)
  let text = ''
  for await (const chunk of await entryStream(zip, entries.get('manifest.json')!)) text += String(chunk)
  zip.close()
  const manifest = JSON.parse(text) as { format?: string; tables?: object }
  assert.equal(manifest.format, 'workplace-backup/1')
  assert.ok(Object.keys(manifest.tables ?? {}).includes('users'))
})
