/**
 * The actor cache (platform/auth/actor-cache.ts) must never serve a stale actor: changes made through
 * the API apply on the very next request; changes made by another process (here: a separate
 * connection that bypasses this process entirely) arrive by NOTIFY; a lost LISTEN connection turns
 * the cache off.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { buildTestApp, call } from './helpers/build-test-app.js'
import { given } from './helpers/given.js'
import { testDatabaseUrl, testDb } from './helpers/test-database.js'

const db = testDb()
const status = async (token: string, url: string) => (await call(await buildTestApp(), token, { method: 'GET', url })).statusCode

/** A connection of "another process": its writes never pass through this process's pool. */
async function otherProcess<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 3000): Promise<number> {
  const started = Date.now()
  while (!(await probe())) {
    if (Date.now() - started > timeoutMs) assert.fail(`${what}: not within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 20))
  }
  return Date.now() - started
}

test('role and department changes made through the API apply on the very next request', async () => {
  const tenant = await given.tenant(db)
  const roleId = await given.role(db, tenant, ['users.view', 'forms.view'])
  const user = await given.user(db, tenant, { roleId })
  const departmentId = await given.department(db, tenant, [user.id])
  const folderId = await given.folder(db, tenant, { type: 'form' })
  await given.grant(db, tenant, { key: 'view', to: ['department', departmentId], on: ['folder', folderId] })
  const app = await buildTestApp()
  assert.equal(await status(user.token, `/api/users/${tenant.adminId}`), 200)
  assert.equal(await status(user.token, `/api/folders/${folderId}`), 200)

  const roleChange = await call(app, tenant.adminToken, { method: 'PUT', url: `/api/roles/${roleId}`, payload: { permissions: ['forms.view'] } })
  const departmentChange = await call(app, tenant.adminToken, { method: 'PUT', url: `/api/departments/${departmentId}`, payload: { user_ids: [] } })

  assert.equal(roleChange.statusCode, 200, roleChange.body)
  assert.equal(departmentChange.statusCode, 200, departmentChange.body)
  assert.equal(await status(user.token, `/api/users/${tenant.adminId}`), 403)
  assert.equal(await status(user.token, `/api/folders/${folderId}`), 404)
})

test('logout and deactivation through the API refuse the token at once', async () => {
  const tenant = await given.tenant(db)
  const leaving = await given.user(db, tenant)
  const deactivated = await given.user(db, tenant)
  const app = await buildTestApp()
  assert.equal(await status(leaving.token, '/api/users/current'), 200)
  assert.equal(await status(deactivated.token, '/api/users/current'), 200)

  assert.equal((await call(app, leaving.token, { method: 'POST', url: '/api/auth/logout' })).statusCode, 204)
  const deactivation = await call(app, tenant.adminToken, { method: 'PUT', url: `/api/users/${deactivated.id}`, payload: { active: false } })

  assert.equal(deactivation.statusCode, 200, deactivation.body)
  assert.equal(await status(leaving.token, '/api/users/current'), 401)
  assert.equal(await status(deactivated.token, '/api/users/current'), 401)
})

test('a change committed by this process clears the cache itself, without waiting for NOTIFY', async () => {
  const tenant = await given.tenant(db)
  const inTransaction = await given.user(db, tenant)
  const rolledBack = await given.user(db, tenant)
  assert.equal(await status(inTransaction.token, '/api/users/current'), 200)
  assert.equal(await status(rolledBack.token, '/api/users/current'), 200)

  // triggers off for these transactions: no NOTIFY; only the pool's commit hook can tell the cache
  await db.transaction().execute(async (trx) => {
    await sql`set local session_replication_role = replica`.execute(trx)
    await trx.updateTable('users').set({ active: false }).where('id', '=', inTransaction.id).execute()
    assert.equal(await status(inTransaction.token, '/api/users/current'), 200, 'uncommitted: still active')
  })
  await db.transaction().execute(async (trx) => {
    await sql`set local session_replication_role = replica`.execute(trx)
    await trx.updateTable('users').set({ active: false }).where('id', '=', rolledBack.id).execute()
    throw new Error('roll back')
  }).catch(() => undefined)

  assert.equal(await status(inTransaction.token, '/api/users/current'), 401)
  assert.equal(await status(rolledBack.token, '/api/users/current'), 200)
})

test('a change committed by another process reaches the cache by NOTIFY', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  assert.equal(await status(user.token, '/api/users/current'), 200)
  // with triggers off (replication role) the change sends no NOTIFY: the cached actor still answers,
  // which shows the lookup is cached and that NOTIFY is what keeps it fresh
  await otherProcess(async (client) => {
    await client.query(`set session_replication_role = replica`)
    await client.query('update users set first_name = $1 where id = $2', ['Silent', user.id])
  })
  assert.equal(await status(user.token, '/api/users/current'), 200)

  await otherProcess((client) => client.query('update users set active = false where id = $1', [user.id]))

  const ms = await eventually('the deactivated user is refused', async () => (await status(user.token, '/api/users/current')) === 401)
  console.log(`# the other process's change applied after ${ms} ms`)
})

test('while the LISTEN connection is lost the cache is off; it serves again once reconnected', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  assert.equal(await status(user.token, '/api/users/current'), 200)

  await otherProcess(async (client) => {
    await client.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'listen actor_changed%'`)
    await new Promise((r) => setTimeout(r, 200))
    await client.query(`set session_replication_role = replica`)
    await client.query('update users set active = false where id = $1', [user.id])
  })

  // no NOTIFY was sent, and none could have been heard: the cache dropped everything when it lost the connection
  assert.equal(await status(user.token, '/api/users/current'), 401)
  // reconnected (after about a second): a silent change goes unnoticed again, i.e. lookups are cached
  await eventually('the cache serves again', async () => {
    const probe = await given.user(db, tenant)
    assert.equal(await status(probe.token, '/api/users/current'), 200)
    await otherProcess(async (client) => {
      await client.query(`set session_replication_role = replica`)
      await client.query('update users set active = false where id = $1', [probe.id])
    })
    return (await status(probe.token, '/api/users/current')) === 200
  }, 5000)
})
