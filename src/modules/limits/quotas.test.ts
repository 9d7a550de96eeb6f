/** Quotas per tenant (issue 42, docs/limits.md): stored file bytes, push subscriptions, restored users. */
import assert from 'node:assert/strict'
import fs from 'node:fs/promises'
import path from 'node:path'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { buildApp } from '../../app.js'
import { bearer, call, instrumentTestApp, testConfig } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { userAgentKeys } from '../../../test/helpers/push-service.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { fixture, multipart } from '../../../test/fixtures/users/forms.js'

const OPERATOR = 'operator-test-token-0123456789'
const db = testDb()
const GiB = 1024 ** 3

let shared: Promise<FastifyInstance> | undefined
const app = () =>
  (shared ??= buildApp({ config: testConfig({ OPERATOR_TOKEN: OPERATOR }), db }).then(instrumentTestApp))

async function usage(tenant: GivenTenant) {
  const res = await call(await app(), tenant.adminToken, { method: 'GET', url: '/api/administration/usage' })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().data.quotas as Record<string, { used: number; limit: number }>
}

/** The operator's override (PUT replaces every quota override: what is not named returns to the default). */
async function setQuotas(tenant: GivenTenant, quotas: Record<string, number>) {
  const res = await (
    await app()
  ).inject({
    method: 'PUT',
    url: `/api/operator/tenants/${tenant.slug}/limits`,
    headers: bearer(OPERATOR),
    payload: { quotas },
  })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().quotas as Record<string, number>
}

function assertQuotaProblem(
  res: { statusCode: number; headers: Record<string, unknown>; json: () => any; body: string },
  status: number,
  quota: string,
  limit: number,
  used: number,
) {
  assert.equal(res.statusCode, status, res.body)
  assert.equal(res.headers['content-type'], 'application/problem+json')
  const problem = res.json()
  assert.equal(problem.code, 'quota_exceeded')
  assert.equal(problem.status, status)
  assert.deepEqual(problem.errors, { quota: [quota] })
  assert.equal(problem.quota, quota)
  assert.equal(problem.limit, limit)
  assert.equal(problem.used, used)
  assert.match(problem.detail, new RegExp(`${quota} quota`))
}

// ---- file_bytes ----------------------------------------------------------------------------------

async function upload(tenant: GivenTenant, file: Buffer, poster?: Buffer) {
  const body = multipart(
    { name: 'report.bin' },
    { file: { bytes: file }, ...(poster ? { poster: { bytes: poster, filename: 'poster.png' } } : {}) },
  )
  return call(await app(), tenant.adminToken, {
    method: 'POST',
    url: '/api/filemanager/files',
    payload: body.payload,
    headers: body.headers,
  })
}

/** What the tenant keeps: its file rows, their domain events, and the files in its storage area. */
async function kept(tenant: GivenTenant) {
  const { rows } = await sql<{ files: number; events: number }>`
    select (select count(*) from filemanager_files where tenant_id = ${tenant.id})::int8 as files,
           (select count(*) from domain_events where tenant_id = ${tenant.id}
              and type = 'filemanagerFile.created')::int8 as events`.execute(db)
  const area = path.join(process.env.TEST_STORAGE_DIR!, 'filemanager', String(tenant.id))
  const stored = (await fs.readdir(area).catch(() => [] as string[])).sort()
  return { ...rows[0]!, stored }
}

test('file_bytes: an upload past the quota (file and poster) is a 413 naming it, and nothing is kept; the operator raises it', async () => {
  const tenant = await given.tenant(db)
  assert.deepEqual((await usage(tenant)).file_bytes, { used: 0, limit: 50 * GiB })
  const poster = Buffer.concat([fixture('pixel.png'), Buffer.alloc(1000)]) // a PNG by its magic bytes
  const first = await upload(tenant, Buffer.alloc(1000, 1), poster)
  assert.equal(first.statusCode, 201, first.body)
  const used = 1000 + poster.length
  assert.deepEqual((await usage(tenant)).file_bytes, { used, limit: 50 * GiB }, 'the poster counts')

  const limit = used + 1500
  assert.equal((await setQuotas(tenant, { file_bytes: limit })).file_bytes, limit)
  const before = await kept(tenant)
  assert.deepEqual([before.files, before.events, before.stored.length], [1, 1, 2])
  // 1000 bytes fit, with the poster they do not
  const refused = await upload(tenant, Buffer.alloc(1000, 2), poster)
  assertQuotaProblem(refused, 413, 'file_bytes', limit, used)
  const tooBig = await upload(tenant, Buffer.alloc(1501, 3))
  assertQuotaProblem(tooBig, 413, 'file_bytes', limit, used)
  assert.deepEqual(await kept(tenant), before, 'no row, no event, no stored bytes of a refused upload')
  assert.deepEqual((await usage(tenant)).file_bytes, { used, limit })

  const fits = await upload(tenant, Buffer.alloc(1500, 4))
  assert.equal(fits.statusCode, 201, fits.body)
  assert.deepEqual((await usage(tenant)).file_bytes, { used: limit, limit }, 'exactly at the limit')
  assertQuotaProblem(await upload(tenant, Buffer.alloc(1, 5)), 413, 'file_bytes', limit, limit)

  await setQuotas(tenant, { file_bytes: limit + 1 })
  const raised = await upload(tenant, Buffer.alloc(1, 6))
  assert.equal(raised.statusCode, 201, raised.body)
  // deleting a file gives its bytes back
  const removed = await call(await app(), tenant.adminToken, {
    method: 'DELETE',
    url: `/api/filemanager/files/${first.json().id}`,
  })
  assert.equal(removed.statusCode, 204)
  assert.deepEqual((await usage(tenant)).file_bytes, { used: limit + 1 - used, limit: limit + 1 })
})

test('file_bytes: uploads racing for the last bytes: exactly as many as fit are kept', async () => {
  const tenant = await given.tenant(db)
  await setQuotas(tenant, { file_bytes: 2500 })
  const results = await Promise.all(Array.from({ length: 5 }, (_, i) => upload(tenant, Buffer.alloc(1000, i))))
  assert.deepEqual(
    results.map((r) => r.statusCode).sort(),
    [201, 201, 413, 413, 413],
    results.map((r) => r.body).join('\n'),
  )
  const after = await kept(tenant)
  assert.deepEqual([after.files, after.stored.length], [2, 2])
  assert.equal((await usage(tenant)).file_bytes.used, 2000)
})

test('file_bytes: a tenant past 2^31 bytes is summed as a bigint and answered as a JSON number', async () => {
  const tenant = await given.tenant(db)
  // a row as a large upload leaves it (the bytes themselves are not needed for the sum)
  await sql`insert into filemanager_files (tenant_id, user_id, name, size, media_type, storage_name, poster_size)
    values (${tenant.id}, ${tenant.adminId}, 'big.iso', ${3 * GiB}, 'application/octet-stream', 'big', ${5 * 1024 ** 2})`.execute(
    db,
  )
  const res = await call(await app(), tenant.adminToken, { method: 'GET', url: '/api/administration/usage' })
  assert.match(res.body, new RegExp(`"file_bytes":\\{"used":${3 * GiB + 5 * 1024 ** 2},"limit":${50 * GiB}\\}`))
  await setQuotas(tenant, { file_bytes: 3 * GiB })
  assertQuotaProblem(await upload(tenant, Buffer.alloc(10)), 413, 'file_bytes', 3 * GiB, 3 * GiB + 5 * 1024 ** 2)
})

// ---- push_subscriptions --------------------------------------------------------------------------

async function subscribe(token: string, endpoint: string) {
  const keys = userAgentKeys()
  return call(await app(), token, {
    method: 'POST',
    url: '/api/push-subscriptions',
    payload: { endpoint, expirationTime: null, keys: { p256dh: keys.p256dh, auth: keys.auth } },
  })
}

const endpoints = async (tenant: GivenTenant) =>
  (
    await db
      .selectFrom('push_subscriptions')
      .select(['endpoint', 'user_id'])
      .where('tenant_id', '=', tenant.id)
      .orderBy('endpoint')
      .execute()
  ).map((r) => `${r.endpoint} ${r.user_id}`)

test('push_subscriptions: a new endpoint past the quota is a 403 naming it; a known endpoint re-subscribes at the limit', async () => {
  const tenant = await given.tenant(db)
  const anna = await given.user(db, tenant)
  const ben = await given.user(db, tenant)
  await setQuotas(tenant, { push_subscriptions: 2 })
  const push = (n: number) => `https://push.example/quota/${tenant.id}/${n}`
  assert.equal((await subscribe(anna.token, push(1))).statusCode, 201)
  assert.equal((await subscribe(ben.token, push(2))).statusCode, 201)
  const before = await endpoints(tenant)

  assertQuotaProblem(await subscribe(anna.token, push(3)), 403, 'push_subscriptions', 2, 2)
  assert.deepEqual(await endpoints(tenant), before, 'nothing written')

  // at the limit: the browser re-subscribes (new keys), and the device moves to another user
  const again = await subscribe(anna.token, push(1))
  assert.equal(again.statusCode, 200, again.body)
  const moved = await subscribe(anna.token, push(2))
  assert.equal(moved.statusCode, 200, moved.body)
  assert.deepEqual(await endpoints(tenant), [`${push(1)} ${anna.id}`, `${push(2)} ${anna.id}`])
  assert.deepEqual((await usage(tenant)).push_subscriptions, { used: 2, limit: 2 })

  // raised by the operator: three new endpoints race for two places
  await setQuotas(tenant, { push_subscriptions: 4 })
  const racing = await Promise.all([3, 4, 5].map((n) => subscribe(ben.token, push(n))))
  assert.deepEqual(racing.map((r) => r.statusCode).sort(), [201, 201, 403], racing.map((r) => r.body).join('\n'))
  assert.deepEqual((await usage(tenant)).push_subscriptions, { used: 4, limit: 4 })
})

// ---- users: a restored user counts again ---------------------------------------------------------

test('users: restoring a deleted user at the users quota is a 403 naming it, nothing changed; allowed once raised', async () => {
  const tenant = await given.tenant(db)
  const leaver = await given.user(db, tenant)
  const deleted = await call(await app(), tenant.adminToken, { method: 'DELETE', url: `/api/users/${leaver.id}` })
  assert.equal(deleted.statusCode, 200, deleted.body)
  const { used } = (await usage(tenant)).users
  await setQuotas(tenant, { users: used })
  const records = async () => {
    const { rows } = await sql<{ deleted: boolean; restored: number }>`
      select (select deleted_at is not null from users where tenant_id = ${tenant.id} and id = ${leaver.id}) as deleted,
             (select count(*) from domain_events where tenant_id = ${tenant.id} and type = 'user.restored')::int8 as restored`.execute(
      db,
    )
    return rows[0]!
  }

  const refused = await call(await app(), tenant.adminToken, { method: 'POST', url: `/api/users/restore/${leaver.id}` })
  assertQuotaProblem(refused, 403, 'users', used, used)
  assert.deepEqual(await records(), { deleted: true, restored: 0 }, 'still deleted, no event or audit record')
  // a user who is not deleted is still a 422 (the quota is asked only for a real restore)
  const notDeleted = await call(await app(), tenant.adminToken, {
    method: 'POST',
    url: `/api/users/restore/${tenant.adminId}`,
  })
  assert.equal(notDeleted.json().code, 'not_deleted')

  await setQuotas(tenant, { users: used + 1 })
  const restored = await call(await app(), tenant.adminToken, {
    method: 'POST',
    url: `/api/users/restore/${leaver.id}`,
  })
  assert.equal(restored.statusCode, 200, restored.body)
  assert.deepEqual(await records(), { deleted: false, restored: 1 })
  assert.deepEqual((await usage(tenant)).users, { used: used + 1, limit: used + 1 })
})
