import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { givenTarget, useTestShareTargets } from '../../../test/helpers/shared-items-support.js'

const db = testDb()
const app = await buildTestApp()
await useTestShareTargets(db)
const get = (token: string, url: string) => call(app, token, { method: 'GET', url })

/** Accesses are written in batches (every 200 ms): wait until `count` rows are there. */
async function accessesOf(token: string, id: string, count: number, query = '') {
  for (let i = 0; i < 50; i++) {
    const res = await get(token, `/api/administration/shared-items/${id}/accesses${query}`)
    assert.equal(res.statusCode, 200, res.body)
    const rows = res.json() as Array<Record<string, any>>
    if (rows.length >= count) return rows
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`fewer than ${count} accesses recorded`)
}

test('each resolution of the stable URL is logged with its outcome; the admin show counts them', async () => {
  const tenant = await given.tenant(db)
  const viewer = await given.user(db, tenant, {
    roleId: await given.role(db, tenant, ['filemanager.view', 'calendar.view']),
  })
  const outsider = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['filemanager.view']) })
  const file = await givenTarget(db, tenant, 'filemanagerFile', { title: 'a.pdf' })
  const event = await givenTarget(db, tenant, 'calendarEvent', { title: 'Kick-off' })
  await given.grant(db, tenant, { key: 'view', to: ['user', viewer.id], on: ['calendarEvent', event] })
  const redirect = await given.sharedItem(db, tenant, {
    type: 'calendarEvent',
    targetable_id: event,
    redirect_type: 'redirect',
  })
  const withToken = await given.sharedItem(db, tenant, {
    type: 'filemanagerFile',
    targetable_id: file,
    redirect_type: 'redirectWithGrantToken',
  })
  const none = await given.sharedItem(db, tenant, {
    type: 'filemanagerFile',
    targetable_id: file,
    redirect_type: 'none',
  })

  assert.equal((await get(viewer.token, `/shared/${redirect}`)).statusCode, 302)
  assert.equal((await get(outsider.token, `/shared/${redirect}`)).statusCode, 403)
  assert.equal((await get(viewer.token, `/shared/${withToken}?showFileContent=true`)).statusCode, 302)
  assert.equal((await get(viewer.token, `/shared/${none}`)).statusCode, 200)
  await given.grant(db, tenant, { key: 'view', to: ['user', viewer.id], on: ['sharedItem', none] })
  assert.equal((await get(outsider.token, `/shared/${none}`)).statusCode, 404)

  const onRedirect = await accessesOf(tenant.adminToken, redirect, 2)
  assert.deepEqual(
    onRedirect.map((a) => [a.outcome, a.user_id]),
    [
      ['denied', outsider.id],
      ['redirected', viewer.id],
    ],
    'newest first',
  )
  const onToken = await accessesOf(tenant.adminToken, withToken, 1)
  assert.deepEqual([onToken[0]!.outcome, onToken[0]!.url_type], ['grant_token_issued', 'showFileContent'])
  const onNone = await accessesOf(tenant.adminToken, none, 2, '?sort=id')
  assert.deepEqual(
    onNone.map((a) => a.outcome),
    ['resolved_without_redirect', 'not_found'],
  )
  assert.deepEqual(
    (await accessesOf(tenant.adminToken, none, 1, '?filter[outcome]=not_found')).map((a) => a.user_id),
    [outsider.id],
  )

  const shown = (await get(tenant.adminToken, `/api/administration/shared-items/${redirect}`)).json()
  assert.equal(shown.access_count, 2)
  assert.match(shown.last_accessed_at, /^\d{4}-\d\d-\d\d /)
  assert.equal((await get(viewer.token, `/api/administration/shared-items/${redirect}/accesses`)).statusCode, 403)
  const other = await given.tenant(db)
  assert.equal((await get(other.adminToken, `/api/administration/shared-items/${redirect}/accesses`)).statusCode, 404)
})
