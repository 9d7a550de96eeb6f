import assert from 'node:assert/strict'
import { test } from 'node:test'
import { purgeTenantChanges } from './sync.queries.js'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given, type GivenUser } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { type FeedAnswer, key, plain, snapshotState, syncAll } from '../../../test/helpers/sync-client.js'

// Client views stored as rows of a chain (decision 0024, 4): older cursors, pruning, growth by difference.

const db = testDb()
const app = await buildTestApp()

async function world() {
  const tenant = await given.tenant(db)
  const roleId = await given.role(db, tenant, ['infoboard.view'])
  const alice = await given.user(db, tenant, { roleId })
  const bob = await given.user(db, tenant, { roleId })
  return { tenant, alice, bob, admin: tenant.adminToken }
}

async function post(token: string, url: string, payload: object): Promise<Record<string, unknown>> {
  const res = await call(app, token, { method: 'POST', url, payload })
  assert.ok(res.statusCode < 300, res.body)
  return res.json()
}
const channel = async (admin: string, name = 'News') =>
  Number((await post(admin, '/api/folders', { type: 'infoboardChannel', name, parent_id: null })).id)
const postIn = async (admin: string, channelId: number, title = 'Hello') =>
  Number((await post(admin, '/api/infoboard/posts', { channel_id: channelId, title, body: '<p>x</p>' })).id)
const grantTo = (admin: string, userId: number, folderId: number) =>
  post(admin, '/api/entity-permissions', {
    key: 'view',
    permission_entity: 'user',
    permission_entity_id: userId,
    target_entity: 'folder',
    target_entity_id: folderId,
  })
const revoke = async (admin: string, grantId: unknown) => {
  const res = await call(app, admin, { method: 'DELETE', url: `/api/entity-permissions/${String(grantId)}` })
  assert.ok(res.statusCode < 300, res.body)
}

/** Syncs from `cursor` on the phone and checks the result equals a fresh snapshot. */
async function converges(user: GivenUser, state: Map<string, unknown>, cursor: string) {
  const next = await syncAll(app, user.token, state, { cursor, device: 'phone' })
  assert.deepEqual(plain(next.state), plain(await snapshotState(app, user.token)))
  return next
}
const removes = (answers: FeedAnswer[]) =>
  answers.flatMap((a) => a.changes.filter((c) => c.op === 'remove').map((c) => `${key(c)} ${c.reason}`)).sort()

const upserts = (answers: FeedAnswer[]) =>
  answers.flatMap((a) => a.changes.filter((c) => c.op === 'upsert').map(key)).sort()

/** The rows of the phone's views (`converges` takes a snapshot on another device to compare). */
const viewRows = (tenantId: number) =>
  db
    .selectFrom('sync_view_items')
    .select(['entity', 'entity_id', 'added_in', 'removed_in'])
    .where('tenant_id', '=', tenantId)
    .where('chain', 'in', (eb) =>
      eb.selectFrom('sync_views').select('chain').where('tenant_id', '=', tenantId).where('device', '=', 'phone'),
    )
    .execute()

test('an older cursor of the device after an access change is answered from its own view, and goes on', async () => {
  const { admin, alice, bob } = await world()
  const news = await channel(admin)
  const first = await syncAll(app, alice.token, new Map(), { device: 'phone' })
  const postId = await postIn(admin, news)
  const withPost = await converges(alice, first.state, first.cursor)
  const granted = await grantTo(admin, bob.id, news)

  // the client lost the answer after its first cursor and retries with it: its view, without the
  // post, is not the chain's newest any more; then both branches go on
  const retried = await converges(alice, first.state, first.cursor)
  const lost = await converges(alice, withPost.state, withPost.cursor)
  await revoke(admin, granted.id)
  const back = await converges(alice, retried.state, retried.cursor)
  const backFromLatest = await converges(alice, lost.state, lost.cursor)

  assert.deepEqual(removes(lost.answers), [`folder:${news} access_lost`, `infoboardPost:${postId} access_lost`])
  assert.deepEqual(removes(retried.answers), [`folder:${news} access_lost`])
  assert.deepEqual(upserts(back.answers), [`folder:${news}`, `infoboardPost:${postId}`])
  assert.deepEqual(upserts(backFromLatest.answers), upserts(back.answers))
})

test('after an access change the stored views grow by the difference only', async () => {
  const { tenant, admin, alice, bob } = await world()
  const channels = [await channel(admin, 'A'), await channel(admin, 'B'), await channel(admin, 'C')]
  for (const id of channels) for (let i = 0; i < 5; i++) await postIn(admin, id, `Post ${i}`)
  const first = await syncAll(app, alice.token, new Map(), { device: 'phone' })
  const snapshotRows = (await viewRows(tenant.id)).length

  const granted = await grantTo(admin, bob.id, channels[0]!)
  const lost = await converges(alice, first.state, first.cursor)
  const afterLoss = await viewRows(tenant.id)
  await revoke(admin, granted.id)
  await converges(alice, lost.state, lost.cursor)
  const afterReturn = await viewRows(tenant.id)

  // 3 folders, 15 posts and how folders are presented, at least
  assert.ok(snapshotRows >= 18, String(snapshotRows))
  assert.equal(removes(lost.answers).length, 6)
  // the loss of a channel and its 5 posts: 6 rows marked removed, none written
  assert.equal(afterLoss.length, snapshotRows)
  assert.equal(afterLoss.filter((row) => row.removed_in !== null).length, 6)
  // their return: 6 rows written
  assert.equal(afterReturn.length, snapshotRows + 6)
})

test('pruning keeps the rows of the 16 kept views only; the purge drops whole chains with their views', async () => {
  const { tenant, admin, alice, bob } = await world()
  const news = await channel(admin)
  const secret = await channel(admin, 'Secret')
  const secretPost = await postIn(admin, secret)
  let synced = await syncAll(app, alice.token, new Map(), { device: 'phone' })
  await grantTo(admin, bob.id, secret)
  synced = await converges(alice, synced.state, synced.cursor)
  const removedRows = async () =>
    (await viewRows(tenant.id)).filter((row) => row.entity_id === String(secretPost) && row.removed_in !== null)
  const removedBefore = await removedRows()

  for (let i = 0; i < 16; i++) {
    await postIn(admin, news, `Post ${i}`)
    synced = await converges(alice, synced.state, synced.cursor)
  }
  const views = await db
    .selectFrom('sync_views')
    .select((eb) => [eb.fn.min('id').as('oldest'), eb.fn.countAll<number>().as('count')])
    .where('tenant_id', '=', tenant.id)
    .where('device', '=', 'phone')
    .executeTakeFirstOrThrow()
  const rows = await viewRows(tenant.id)
  const removedAfter = await removedRows()
  // a deletion after the last sync: its tombstone, purged, puts the horizon past every view
  const doomed = await postIn(admin, news, 'Doomed')
  assert.ok((await call(app, admin, { method: 'DELETE', url: `/api/infoboard/posts/${doomed}` })).statusCode < 300)
  await purgeTenantChanges(db, tenant.id, new Date(Date.now() + 1000))
  const purgedViews = await db.selectFrom('sync_views').select('id').where('tenant_id', '=', tenant.id).execute()

  assert.equal(removedBefore.length, 1)
  assert.deepEqual(removedAfter, [])
  assert.equal(Number(views.count), 16)
  for (const row of rows)
    assert.ok(row.removed_in === null || Number(row.removed_in) > Number(views.oldest), JSON.stringify(row))
  // the purge raised the horizon past every view: none is kept, nor any of their rows
  assert.deepEqual(purgedViews, [])
  assert.deepEqual(
    await db.selectFrom('sync_view_items').select('chain').where('tenant_id', '=', tenant.id).execute(),
    [],
  )
})

test("an erasure deletes the rows of the person's views, not anyone else's", async () => {
  const { tenant, admin, alice, bob } = await world()
  await postIn(admin, await channel(admin))
  const chains: number[] = []
  for (const user of [alice, bob]) {
    await syncAll(app, user.token, new Map(), { device: 'phone' })
    const view = await db
      .selectFrom('sync_views')
      .select('chain')
      .where('tenant_id', '=', tenant.id)
      .where('user_id', '=', user.id)
      .executeTakeFirstOrThrow()
    chains.push(Number(view.chain))
  }
  const chainsLeft = async () =>
    (
      await db.selectFrom('sync_view_items').select('chain').distinct().where('tenant_id', '=', tenant.id).execute()
    ).map((row) => Number(row.chain))
  const before = await chainsLeft()

  const res = await call(app, admin, { method: 'POST', url: `/api/users/${alice.id}/erasure` })

  assert.ok(res.statusCode < 300, res.body)
  assert.deepEqual(before.sort(), [...chains].sort())
  assert.deepEqual(await chainsLeft(), [chains[1]])
})
