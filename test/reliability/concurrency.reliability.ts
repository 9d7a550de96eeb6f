/**
 * Concurrency (contract 90): identical creates race for one record; parallel bulk marks count each
 * unread notification exactly once.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { issueAccessToken } from '../../src/platform/auth/tokens.js'
import { call } from '../helpers/build-test-app.js'
import { given } from '../helpers/given.js'
import { testDb } from '../helpers/test-database.js'
import { appWithRouteTable, openApiHas } from './support/routes.js'

const db = testDb()
let app: FastifyInstance

before(async () => {
  ;({ app } = await appWithRouteTable())
})
after(() => app.close())

const tally = (statuses: number[]) =>
  statuses.reduce<Record<number, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {})

test('50 parallel identical entity-permission creates leave exactly one record', async (t) => {
  if (!(await openApiHas(app, 'POST', '/api/entity-permissions')))
    return t.skip('POST /api/entity-permissions is not in the OpenAPI document yet')
  if (!(await openApiHas(app, 'POST', '/api/folders'))) return t.skip('no grant target module (folders) yet')
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const folderId = await given.folder(db, tenant, { type: 'form' })
  const body = {
    key: 'view',
    permission_entity: 'user',
    permission_entity_id: user.id,
    target_entity: 'folder',
    target_entity_id: folderId,
  }
  const responses = await Promise.all(
    Array.from({ length: 50 }, () =>
      call(app, tenant.adminToken, { method: 'POST', url: '/api/entity-permissions', payload: body }),
    ),
  )
  const statuses = responses.map((r) => r.statusCode)
  assert.ok(
    statuses.every((s) => s === 200 || s === 201),
    `statuses ${JSON.stringify(tally(statuses))}: ${responses.find((r) => r.statusCode >= 300)?.body}`,
  )
  const rows = await db
    .selectFrom('entity_permissions')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .where('target_entity', '=', 'folder')
    .where('target_entity_id', '=', String(folderId))
    .where('permission_entity_id', '=', user.id)
    .execute()
  assert.equal(rows.length, 1)
  assert.equal(statuses.filter((s) => s === 201).length, 1, `statuses ${JSON.stringify(tally(statuses))}`)
  assert.ok(
    responses.every((r) => r.json().id === rows[0].id),
    'every answer names the one record',
  )
})

test('20 parallel creates of one username: one 201, nineteen 409', async (t) => {
  if (!(await openApiHas(app, 'POST', '/api/users')))
    return t.skip('POST /api/users is not in the OpenAPI document yet')
  const tenant = await given.tenant(db)
  const body = {
    username: 'race-user',
    password: 'a-long-enough-password-1',
    first_name: 'Race',
    last_name: 'User',
    role_id: tenant.employeeRoleId,
    lang_id: 'en-US',
  }
  const responses = await Promise.all(
    Array.from({ length: 20 }, () =>
      call(app, tenant.adminToken, { method: 'POST', url: '/api/users', payload: body }),
    ),
  )
  const statuses = tally(responses.map((r) => r.statusCode))
  assert.deepEqual(statuses, { 201: 1, 409: 19 }, responses.find((r) => ![201, 409].includes(r.statusCode))?.body)
  for (const r of responses.filter((x) => x.statusCode === 409))
    assert.equal(r.headers['content-type'], 'application/problem+json')
  const rows = await db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .where('username', '=', 'race-user')
    .execute()
  assert.equal(rows.length, 1)
})

test('parallel PUT /api/notifications from two clients count every unread record once in total', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  const second = (await issueAccessToken(db, tenant.id, user.id, 1)).token
  const unread = 500
  await db
    .insertInto('notifications')
    .values(
      Array.from({ length: unread }, (_, i) => ({
        tenant_id: tenant.id,
        notifiable_id: user.id,
        type: 'genericNotification',
        targetable_type: 'genericNotification',
        targetable_id: 1,
        source_key: `race:${i}`,
        data: JSON.stringify({ title: 't', body: 'b', url: '/x' }),
      })) as never,
    )
    .execute()
  const requests = Array.from({ length: 20 }, (_, i) =>
    call(app, i % 2 === 0 ? user.token : second, {
      method: 'PUT',
      url: '/api/notifications',
      payload: { read_at: '2026-01-01 00:00:00' },
    }),
  )
  const responses = await Promise.all(requests)
  assert.ok(
    responses.every((r) => r.statusCode === 200),
    responses.find((r) => r.statusCode !== 200)?.body,
  )
  const counted = responses.reduce((sum, r) => sum + Number(r.json().data), 0)
  assert.equal(counted, unread, `the changed counts add up to ${counted}`)
  const left = await db
    .selectFrom('notifications')
    .select(db.fn.countAll().as('n'))
    .where('tenant_id', '=', tenant.id)
    .where('read_at', 'is', null)
    .executeTakeFirstOrThrow()
  assert.equal(Number(left.n), 0)
})
