import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import pino from 'pino'
import { buildApp } from '../../app.js'
import { sealCursor } from './sync-cursor.js'
import { purgeTenantChanges } from './sync.queries.js'
import { recordSyncWrites } from '../../platform/sync/change-log.js'
import { purgeReadNotifications, runFanOut } from '../notifications/notifications.jobs.js'
import { createRetentionService } from '../retention/retention.service.js'
import { issueAccessToken } from '../../platform/auth/tokens.js'
import { buildTestApp, call, testConfig, testSecrets } from '../../../test/helpers/build-test-app.js'
import { fixture, multipart } from '../../../test/fixtures/users/forms.js'
import { given, type GivenUser } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import {
  applyFeed,
  type FeedAnswer,
  key,
  plain,
  snapshotState,
  syncAll,
  syncRequest,
} from '../../../test/helpers/sync-client.js'

const db = testDb()
const app = await buildTestApp()

const READER = ['infoboard.view', 'manuals.view', 'filemanager.view']

async function world(permissions = READER) {
  const tenant = await given.tenant(db)
  const roleId = await given.role(db, tenant, permissions)
  const alice = await given.user(db, tenant, { roleId })
  const bob = await given.user(db, tenant, { roleId })
  return { tenant, roleId, alice, bob, admin: tenant.adminToken }
}

async function ok<T = Record<string, unknown>>(
  res: Promise<{ statusCode: number; body: string; json: <J>() => J }>,
): Promise<T> {
  const r = await res
  assert.ok(r.statusCode >= 200 && r.statusCode < 300, `${r.statusCode} ${r.body}`)
  return r.statusCode === 204 ? ({} as T) : r.json<T>()
}

const post = (token: string, url: string, payload: object) => ok(call(app, token, { method: 'POST', url, payload }))
const put = (token: string, url: string, payload: object) => ok(call(app, token, { method: 'PUT', url, payload }))
const del = (token: string, url: string) => ok(call(app, token, { method: 'DELETE', url }))

async function channel(admin: string, name = 'News', parentId: number | null = null) {
  const f = await post(admin, '/api/folders', { type: 'infoboardChannel', name, parent_id: parentId })
  return Number(f.id)
}
async function postIn(admin: string, channelId: number, title = 'Hello', fields: Record<string, unknown> = {}) {
  const p = await post(admin, '/api/infoboard/posts', { channel_id: channelId, title, body: '<p>x</p>', ...fields })
  return Number(p.id)
}
const grant = (admin: string, to: ['user' | 'role' | 'department', number], on: [string, number]) =>
  post(admin, '/api/entity-permissions', {
    key: 'view',
    permission_entity: to[0],
    permission_entity_id: to[1],
    target_entity: on[0],
    target_entity_id: on[1],
  })

/** Syncs the user from `cursor` and checks the result equals a fresh snapshot. */
async function converges(user: GivenUser, state: Map<string, unknown>, cursor: string, device = 'phone') {
  const next = await syncAll(app, user.token, state, { cursor, device })
  assert.deepEqual(plain(next.state), plain(await snapshotState(app, user.token)))
  return next
}

test('a snapshot holds exactly what the user may see, each record as its own GET returns it', async () => {
  const { admin, alice, bob } = await world()
  const open = await channel(admin, 'Open')
  const hidden = await channel(admin, 'Hidden')
  const postId = await postIn(admin, open)
  await postIn(admin, hidden, 'Secret')
  await grant(admin, ['user', bob.id], ['folder', hidden])

  const { state, answers } = await syncAll(app, alice.token, new Map(), { device: 'phone' })

  assert.equal(answers.length, 1)
  assert.equal(answers[0]!.has_more, false)
  assert.deepEqual(
    [...state.keys()].sort(),
    [`folder:${open}`, `infoboardPost:${postId}`, `notificationPreferences:${alice.id}`].sort(),
  )
  const own = await ok(call(app, alice.token, { method: 'GET', url: `/api/infoboard/posts/${postId}` }))
  assert.deepEqual(state.get(`infoboardPost:${postId}`), own)
  const folder = await ok(call(app, alice.token, { method: 'GET', url: `/api/folders/${open}` }))
  assert.deepEqual(state.get(`folder:${open}`), folder)
})

test('an incremental sync returns created, updated and deleted records, and nothing when nothing changed', async () => {
  const { admin, alice } = await world()
  const news = await channel(admin)
  const first = await postIn(admin, news, 'One')
  const start = await syncAll(app, alice.token, new Map(), { device: 'phone' })

  const idle = (await syncRequest(app, alice.token, { cursor: start.cursor, device: 'phone' })).json<FeedAnswer>()
  assert.deepEqual(idle.changes, [])

  const second = await postIn(admin, news, 'Two')
  await put(admin, `/api/infoboard/posts/${first}`, { title: 'One, edited' })
  const next = (await syncRequest(app, alice.token, { cursor: start.cursor, device: 'phone' })).json<FeedAnswer>()
  assert.deepEqual(next.changes.map((c) => [c.op, key(c)]).sort(), [
    ['upsert', `infoboardPost:${first}`],
    ['upsert', `infoboardPost:${second}`],
  ])
  const edited = next.changes.find((c) => c.id === first)
  assert.ok(edited?.op === 'upsert' && edited.data.title === 'One, edited' && edited.version > 0)

  await del(admin, `/api/infoboard/posts/${second}`)
  const gone = (await syncRequest(app, alice.token, { cursor: next.cursor, device: 'phone' })).json<FeedAnswer>()
  assert.deepEqual(gone.changes, [{ op: 'remove', entity: 'infoboardPost', id: second, reason: 'deleted' }])
  await converges(alice, applyFeed(applyFeed(start.state, next), gone), gone.cursor)
})

/** Alice's phone synced once; `next()` syncs on from the last cursor and checks it converged. */
async function phone(user: GivenUser, device = 'phone') {
  let { state, cursor } = await syncAll(app, user.token, new Map(), { device })
  return {
    held: () => state,
    async next(): Promise<FeedAnswer[]> {
      const synced = await converges(user, state, cursor, device)
      state = synced.state
      cursor = synced.cursor
      return synced.answers
    },
    cursor: () => cursor,
  }
}
const ops = (answers: FeedAnswer[]) =>
  answers.flatMap((a) =>
    a.changes.map((c) => (c.op === 'upsert' ? `upsert ${key(c)}` : `remove ${key(c)} ${c.reason}`)),
  )

test('access_lost, then back: a first view grant to someone else, and its removal', async () => {
  const { admin, alice, bob } = await world()
  const news = await channel(admin)
  const postId = await postIn(admin, news)
  const client = await phone(alice)

  const granted = await grant(admin, ['user', bob.id], ['folder', news])
  assert.deepEqual(ops(await client.next()).sort(), [
    `remove folder:${news} access_lost`,
    `remove infoboardPost:${postId} access_lost`,
  ])

  await del(admin, `/api/entity-permissions/${String(granted.id)}`)
  assert.deepEqual(ops(await client.next()).sort(), [`upsert folder:${news}`, `upsert infoboardPost:${postId}`])
})

test('a grant added to an already restricted record concerns only its grantee: others get an empty answer', async () => {
  const { tenant, admin, alice, bob, roleId } = await world()
  const carol = await given.user(db, tenant, { roleId })
  const news = await channel(admin)
  const postId = await postIn(admin, news)
  await grant(admin, ['user', bob.id], ['infoboardPost', postId])
  const alicePhone = await phone(alice)
  const carolPhone = await phone(carol)

  await grant(admin, ['user', alice.id], ['infoboardPost', postId])

  assert.deepEqual(ops(await alicePhone.next()), [`upsert infoboardPost:${postId}`])
  assert.deepEqual(ops(await carolPhone.next()), [])
  const accessChanges = await db
    .selectFrom('sync_access_changes')
    .select(['scope', 'scope_id'])
    .where('tenant_id', '=', tenant.id)
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow()
  assert.deepEqual(accessChanges, { scope: 'user', scope_id: alice.id })
})

test("a grant that changes no synced entity's visibility (a form's viewFormMessages) records no access change", async () => {
  const { tenant, admin, alice } = await world()
  const form = await post(admin, '/api/forms', { name: 'Damage report' })
  const changesBefore = await accessChangeCount(tenant.id)
  // who may read the form's messages (not synced: they are submissions), not who sees the form
  await post(admin, '/api/entity-permissions', {
    key: 'viewFormMessages',
    permission_entity: 'user',
    permission_entity_id: alice.id,
    target_entity: 'form',
    target_entity_id: Number(form.id),
  })
  assert.equal(await accessChangeCount(tenant.id), changesBefore)
  // a view grant on a synced entity still does
  const news = await channel(admin)
  await grant(admin, ['user', alice.id], ['folder', news])
  await grant(admin, ['user', alice.id], ['form', Number(form.id)])
  assert.equal(await accessChangeCount(tenant.id), changesBefore + 2)
})

async function accessChangeCount(tenantId: number): Promise<number> {
  const row = await db
    .selectFrom('sync_access_changes')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('tenant_id', '=', tenantId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

test("access_lost: the role's permissions change", async () => {
  const { admin, alice, roleId } = await world()
  const news = await channel(admin)
  const postId = await postIn(admin, news)
  const client = await phone(alice)

  await put(admin, `/api/roles/${roleId}`, { permissions: ['manuals.view'] })
  assert.deepEqual(ops(await client.next()).sort(), [
    `remove folder:${news} access_lost`,
    `remove infoboardPost:${postId} access_lost`,
  ])
  await put(admin, `/api/roles/${roleId}`, { permissions: READER })
  assert.deepEqual(ops(await client.next()).sort(), [`upsert folder:${news}`, `upsert infoboardPost:${postId}`])
})

test('a user moved into and out of a department sees its records appear and go (access_lost)', async () => {
  const { tenant, admin, alice } = await world()
  const team = await given.department(db, tenant, [])
  const news = await channel(admin)
  const postId = await postIn(admin, news)
  await grant(admin, ['department', team], ['folder', news])
  const client = await phone(alice)
  assert.deepEqual([...client.held().keys()], [`notificationPreferences:${alice.id}`])

  await put(admin, `/api/departments/${team}`, { user_ids: [alice.id] })
  assert.deepEqual(ops(await client.next()).sort(), [`upsert folder:${news}`, `upsert infoboardPost:${postId}`])
  await put(admin, `/api/departments/${team}`, { user_ids: [] })
  assert.deepEqual(ops(await client.next()).sort(), [
    `remove folder:${news} access_lost`,
    `remove infoboardPost:${postId} access_lost`,
  ])
})

test('access_lost: a folder moved under a restricted parent', async () => {
  const { admin, alice, bob } = await world()
  const restricted = await channel(admin, 'Board')
  await grant(admin, ['user', bob.id], ['folder', restricted])
  const news = await channel(admin, 'News')
  const postId = await postIn(admin, news)
  const client = await phone(alice)

  await put(admin, `/api/folders/${news}`, { parent_id: restricted })
  assert.deepEqual(ops(await client.next()).sort(), [
    `remove folder:${news} access_lost`,
    `remove infoboardPost:${postId} access_lost`,
  ])
})

test('a deactivated user cannot sync; reactivated, the old cursor continues', async () => {
  const { tenant, admin, alice } = await world()
  const news = await channel(admin)
  const client = await phone(alice)

  await put(admin, `/api/users/${alice.id}`, { active: false })
  assert.equal((await syncRequest(app, alice.token, { cursor: client.cursor(), device: 'phone' })).statusCode, 401)
  await put(admin, `/api/users/${alice.id}`, { active: true })
  alice.token = (await issueAccessToken(db, tenant.id, alice.id, 1)).token // deactivation revoked the old one
  const postId = await postIn(admin, news)
  assert.deepEqual(ops(await client.next()), [`upsert infoboardPost:${postId}`])
})

test('a record never visible to the user never appears, not even as a remove', async () => {
  const { admin, alice, bob } = await world()
  const hidden = await channel(admin, 'Hidden')
  await grant(admin, ['user', bob.id], ['folder', hidden])
  const client = await phone(alice)

  const postId = await postIn(admin, hidden)
  await put(admin, `/api/infoboard/posts/${postId}`, { title: 'Still secret' })
  await del(admin, `/api/infoboard/posts/${postId}`)
  await put(admin, `/api/folders/${hidden}`, { name: 'Renamed' })
  assert.deepEqual(ops(await client.next()), [])
})

test('manual entries and file metadata follow their chapter and directory', async () => {
  const { admin, alice, bob } = await world()
  const chapter = await post(admin, '/api/manuals/chapters', { title: 'Safety' })
  const entry = await post(admin, `/api/manuals/chapters/${String(chapter.id)}/entries`, { title: 'Gloves', body: 'x' })
  const client = await phone(alice)
  assert.ok(client.held().has(`manualEntry:${String(entry.id)}`))

  await grant(admin, ['user', bob.id], ['manualChapter', Number(chapter.id)])
  assert.deepEqual(ops(await client.next()).sort(), [
    `remove manualChapter:${String(chapter.id)} access_lost`,
    `remove manualEntry:${String(entry.id)} access_lost`,
  ])
  await del(admin, `/api/manuals/chapters/${String(chapter.id)}`)
  assert.deepEqual(ops(await client.next()), [])
})

test('file metadata: an upload appears, a grant on its directory to someone else takes it away', async () => {
  const { admin, alice, bob } = await world()
  const dir = await post(admin, '/api/filemanager/directories', { name: 'Plans' })
  const client = await phone(alice)
  const body = multipart(
    { directory_id: String(dir.id) },
    { file: { bytes: fixture('pixel.png'), filename: 'a.png', contentType: 'image/png' } },
  )
  const file = await ok(
    call(app, admin, { method: 'POST', url: '/api/filemanager/files', payload: body.payload, headers: body.headers }),
  )

  assert.deepEqual(ops(await client.next()), [`upsert filemanagerFile:${String(file.id)}`])
  await grant(admin, ['user', bob.id], ['filemanagerDirectory', Number(dir.id)])
  assert.deepEqual(ops(await client.next()), [`remove filemanagerFile:${String(file.id)} access_lost`])
})

test('410 sync_reset (problem+json naming the cursor): tampered, another user, another device, too old, another feed shape', async () => {
  const { tenant, admin, alice, bob } = await world()
  const client = await phone(alice)
  const cursor = client.cursor()
  const reset = async (token: string, options: Parameters<typeof syncRequest>[2], why: RegExp) => {
    const res = await syncRequest(app, token, options)
    assert.equal(res.statusCode, 410, res.body)
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
    const problem = res.json<{ code: string; errors: { cursor: string[] } }>()
    assert.equal(problem.code, 'sync_reset')
    assert.match(problem.errors.cursor[0]!, why)
  }

  const flipped = cursor.slice(0, 20) + (cursor[20] === 'A' ? 'B' : 'A') + cursor.slice(21)
  await reset(alice.token, { cursor: flipped, device: 'phone' }, /not a cursor/)
  await reset(alice.token, { cursor: Buffer.from('["forged"]').toString('base64url'), device: 'phone' }, /not a cursor/)
  await reset(bob.token, { cursor, device: 'phone' }, /another user/)
  await reset(alice.token, { cursor, device: 'tablet' }, /another device/)
  const otherShape = sealCursor(testSecrets(), {
    tenant: tenant.id,
    user: alice.id,
    device: 'phone',
    view: 1,
    version: 0,
    schema: 'before',
  })
  await reset(alice.token, { cursor: otherShape, device: 'phone' }, /changed shape/)
  await postIn(admin, await channel(admin))
  // as a purge far ahead would leave it (the clock's row exists once a reader numbered a change)
  await db
    .insertInto('sync_clocks')
    .values({ tenant_id: tenant.id, version: 0, horizon: 1_000_000_000 })
    .onConflict((oc) => oc.column('tenant_id').doUpdateSet({ horizon: 1_000_000_000 }))
    .execute()
  await reset(alice.token, { cursor, device: 'phone' }, /older than/)
})

test('a device keeps its last 16 cursors: an older one answers 410', async () => {
  const { admin, alice } = await world()
  const news = await channel(admin)
  const client = await phone(alice)
  const first = client.cursor()
  for (let i = 0; i < 16; i++) {
    await postIn(admin, news, `Post ${i}`)
    await client.next()
  }
  const res = await syncRequest(app, alice.token, { cursor: first, device: 'phone' })
  assert.equal(res.statusCode, 410)
})

/** Opens a transaction that records a change of `entity` `id` for `tenantId` and stays open until `commit()`. */
async function openWrite(tenantId: number, entity: string, id: number) {
  let commit!: () => void
  const released = new Promise<void>((resolve) => (commit = resolve))
  let recorded!: () => void
  const ready = new Promise<void>((resolve) => (recorded = resolve))
  const done = db.transaction().execute(async (trx) => {
    await recordSyncWrites(trx, tenantId, { changes: [{ entity, id }] })
    recorded()
    await released
  })
  await ready
  return {
    /** Commits the write (again: waits for the same commit). */
    commit: async () => {
      commit()
      await done
    },
  }
}

/**
 * Alice's phone synced over two posts; then a write recording a change of the first (`pending`) is left
 * open, not committed, while the test writes to the second (`free`).
 */
async function phoneBesideAnOpenWrite() {
  const { tenant, admin, alice } = await world()
  const news = await channel(admin)
  const pending = await postIn(admin, news)
  const free = await postIn(admin, news, 'Other')
  const client = await phone(alice)
  const open = await openWrite(tenant.id, 'infoboardPost', pending)
  return { admin, news, pending, free, client, open }
}

const within = <T>(ms: number, what: string, work: Promise<T>) =>
  Promise.race([
    work,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: still waiting after ${ms} ms`)), ms)),
  ])

test("a tenant's writes do not wait for each other's commits: a change record takes no clock", async () => {
  const { admin, news, pending, free, client, open } = await phoneBesideAnOpenWrite()
  try {
    // more writes of the tenant, each with its change record, commit while the first is open
    await within(5000, 'the edit', put(admin, `/api/infoboard/posts/${free}`, { title: 'Edited meanwhile' }))
    const second = await within(5000, 'a new post', postIn(admin, news, 'Second'))
    assert.deepEqual(ops(await client.next()).sort(), [
      `upsert infoboardPost:${free}`,
      `upsert infoboardPost:${second}`,
    ])
  } finally {
    await open.commit()
  }
  assert.deepEqual(ops(await client.next()), [`upsert infoboardPost:${pending}`])
})

test('a change committed after a sync numbered the pending ones comes with the next sync, never skipped', async () => {
  const { admin, pending, free, client, open } = await phoneBesideAnOpenWrite()
  try {
    await put(admin, `/api/infoboard/posts/${free}`, { title: 'Other, edited' })
    // this sync numbers the edit; the open write's record is not visible to it yet
    assert.deepEqual(ops(await client.next()), [`upsert infoboardPost:${free}`])
  } finally {
    await open.commit()
  }
  const answers = await client.next()
  assert.deepEqual(ops(answers), [`upsert infoboardPost:${pending}`])
  const change = answers[0]!.changes[0]!
  assert.ok(change.op === 'upsert' && change.version > 0, `a numbered version: ${JSON.stringify(change)}`)
})

test('readers at once number a change once: the clock moves by the records numbered, with no gaps', async () => {
  const { tenant, admin, alice } = await world()
  const news = await channel(admin)
  const devices = await Promise.all(Array.from({ length: 8 }, (_, i) => phone(alice, `device-${i}`)))
  const clock = async () =>
    Number(
      (await db.selectFrom('sync_clocks').select('version').where('tenant_id', '=', tenant.id).executeTakeFirst())
        ?.version ?? 0,
    )
  const before = await clock()
  const postId = await postIn(admin, news)

  const answers = await Promise.all(devices.map((device) => device.next()))

  for (const answer of answers) assert.deepEqual(ops(answer), [`upsert infoboardPost:${postId}`])
  const numbered = await sql<{ n: string }>`select (select count(*) from sync_changes where tenant_id = ${tenant.id}
      and version > ${before}) + (select count(*) from sync_access_changes where tenant_id = ${tenant.id}
      and version > ${before}) as n`.execute(db)
  assert.ok(Number(numbered.rows[0]!.n) >= 1)
  assert.equal((await clock()) - before, Number(numbered.rows[0]!.n), 'one version per record numbered')
})

/** Long-polls (`wait=20`) from `cursor`, makes `write` meanwhile, and returns the answer, given well before the timeout. */
async function wokenBy(user: GivenUser, cursor: string, write: () => Promise<unknown>): Promise<FeedAnswer> {
  const started = Date.now()
  const waiting = syncRequest(app, user.token, { cursor, device: 'phone', wait: 20 })
  await new Promise((resolve) => setTimeout(resolve, 300))
  await write()
  const answer = (await waiting).json<FeedAnswer>()
  assert.ok(Date.now() - started < 10_000, 'answered on the change, not at the timeout')
  return answer
}

test('wait long-polls: a change made through another app instance (another node) answers at once', async (t) => {
  const { admin, alice } = await world()
  const news = await channel(admin)
  const client = await phone(alice)
  const otherNode = await buildApp({ config: testConfig(), db })
  t.after(() => otherNode.close())

  let created = 0
  const answer = await wokenBy(alice, client.cursor(), async () => {
    const res = await otherNode.inject({
      method: 'POST',
      url: '/api/infoboard/posts',
      headers: { authorization: `Bearer ${admin}` },
      payload: { channel_id: news, title: 'Live', body: 'x' },
    })
    assert.equal(res.statusCode, 201, res.body)
    created = res.json<{ id: number }>().id
  })

  assert.deepEqual(ops([answer]), [`upsert infoboardPost:${created}`])
})

test('wait long-polls: writes of one statement or a transaction of their own wake them once committed (a send, a mark, a shared item, a confirmation)', async () => {
  const { admin, alice } = await world([...READER, 'calendar.view'])
  const event = await post(admin, '/api/calendar/events', {
    title: 'Inventory',
    starts_at: '2026-12-01 08:00:00',
    ends_at: '2026-12-01 12:00:00',
  })
  const asking = await postIn(admin, await channel(admin), 'Read me', { requires_reading_confirmation: true })
  const client = await phone(alice)
  let cursor = client.cursor()
  /** The long poll woken by `write`, and the cursor moved on past its answer. */
  const opsWokenBy = async (write: () => Promise<unknown>) => {
    const answer = await wokenBy(alice, cursor, write)
    cursor = answer.cursor
    return ops([answer])
  }

  let sent = 0
  const sentOps = await opsWokenBy(async () => {
    await post(admin, '/api/notifications', { title: 'Now', body: 'x', url: '/x', user_ids: [alice.id] })
    const list = await ok<Array<{ id: number }>>(call(app, alice.token, { method: 'GET', url: '/api/notifications' }))
    sent = list[0]!.id
  })
  assert.deepEqual(sentOps, [`upsert notification:${sent}`])
  const markedOps = await opsWokenBy(() =>
    put(alice.token, `/api/notifications/${sent}`, { read_at: '2026-12-07 10:00:00' }),
  )
  assert.deepEqual(markedOps, [`upsert notification:${sent}`])
  let item = ''
  const sharedOps = await opsWokenBy(async () => {
    const created = await post(admin, '/api/administration/shared-items', {
      type: 'calendarEvent',
      redirect_type: 'redirect',
      targetable_type: 'calendarEvent',
      targetable_id: Number(event.id),
    })
    item = String(created.id)
  })
  assert.deepEqual(sharedOps, [`upsert sharedItem:${item}`])
  const confirmedOps = await opsWokenBy(() => post(alice.token, `/api/infoboard/posts/${asking}/confirmation`, {}))
  assert.deepEqual(confirmedOps, [`upsert infoboardPost:${asking}`])
})

test('wait without a change answers empty after the seconds asked, with a cursor that continues', async () => {
  const { admin, alice } = await world()
  const news = await channel(admin)
  const client = await phone(alice)
  const started = Date.now()
  const res = await syncRequest(app, alice.token, { cursor: client.cursor(), device: 'phone', wait: 1 })
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json<FeedAnswer>().changes, [])
  assert.ok(Date.now() - started >= 900)
  const postId = await postIn(admin, news)
  const next = await syncRequest(app, alice.token, { cursor: res.json<FeedAnswer>().cursor, device: 'phone' })
  assert.deepEqual(ops([next.json<FeedAnswer>()]), [`upsert infoboardPost:${postId}`])
})

test('bad query values answer 422 naming the field', async () => {
  const { alice } = await world()
  const res = await call(app, alice.token, { method: 'GET', url: '/api/sync?device=a%20b&wait=99' })
  assert.equal(res.statusCode, 422)
  assert.match(res.body, /device/)
  assert.match(res.body, /wait/)
})

test('the purge of old tombstones raises the horizon: a cursor from before it answers 410, a new snapshot goes on', async () => {
  const { tenant, admin, alice } = await world()
  const news = await channel(admin)
  const doomed = await postIn(admin, news)
  const client = await phone(alice)
  const before = client.cursor()
  await del(admin, `/api/infoboard/posts/${doomed}`)
  await client.next()

  const purged = await purgeTenantChanges(db, tenant.id, new Date(Date.now() + 1000))

  assert.ok(purged >= 1)
  const tombstones = await db
    .selectFrom('sync_changes')
    .select('entity_id')
    .where('tenant_id', '=', tenant.id)
    .where('deleted', '=', true)
    .execute()
  assert.deepEqual(tombstones, [])
  assert.equal((await syncRequest(app, alice.token, { cursor: before, device: 'phone' })).statusCode, 410)
  const fresh = await phone(alice, 'tablet')
  const later = await postIn(admin, news)
  assert.deepEqual(ops(await fresh.next()), [`upsert infoboardPost:${later}`])
})

test("the purge takes readers' own states older than the retention along, and raises the horizon", async () => {
  const { tenant, admin, alice, bob } = await world()
  const news = await channel(admin)
  const postId = await postIn(admin, news)
  const client = await phone(alice)
  await ok(call(app, alice.token, { method: 'POST', url: `/api/infoboard/posts/${postId}/seen` }))
  await ok(call(app, bob.token, { method: 'POST', url: `/api/infoboard/posts/${postId}/seen` }))
  const ownStates = () =>
    db
      .selectFrom('sync_changes')
      .select(['entity_id', 'user_id'])
      .where('tenant_id', '=', tenant.id)
      .where('entity', '=', 'infoboardPost/own')
      .orderBy('entity_id')
      .execute()
  assert.deepEqual(
    await ownStates(),
    [alice, bob]
      .map((user) => ({ entity_id: `${postId}/${user.id}`, user_id: user.id }))
      .sort((a, b) => (a.entity_id < b.entity_id ? -1 : 1)),
  )

  const purged = await purgeTenantChanges(db, tenant.id, new Date(Date.now() + 1000))
  assert.ok(purged >= 2, `purged ${purged} change records`)

  assert.deepEqual(await ownStates(), [])
  // the post's own row stays (it is the post's version); a cursor from before the purged states answers 410
  const kept = await db
    .selectFrom('sync_changes')
    .select('entity_id')
    .where('tenant_id', '=', tenant.id)
    .where('entity', '=', 'infoboardPost')
    .execute()
  assert.deepEqual(kept, [{ entity_id: String(postId) }])
  assert.equal((await syncRequest(app, alice.token, { cursor: client.cursor(), device: 'phone' })).statusCode, 410)
  const fresh = await phone(alice, 'tablet')
  const held = fresh.held().get(`infoboardPost:${postId}`) as { my_state: { seen_at: string | null } }
  assert.notEqual(held.my_state.seen_at, null)
})

test("an erasure deletes the person's own change records (who read what), not anyone else's", async () => {
  const { tenant, admin, alice, bob } = await world()
  const news = await channel(admin)
  const postId = await postIn(admin, news)
  for (const user of [alice, bob])
    await ok(call(app, user.token, { method: 'POST', url: `/api/infoboard/posts/${postId}/seen` }))
  const owners = async () =>
    (
      await db
        .selectFrom('sync_changes')
        .select('user_id')
        .where('tenant_id', '=', tenant.id)
        .where('user_id', 'is not', null)
        .execute()
    ).map((row) => Number(row.user_id))
  assert.deepEqual((await owners()).sort(), [alice.id, bob.id].sort())

  await ok(call(app, admin, { method: 'POST', url: `/api/users/${alice.id}/erasure` }))

  assert.deepEqual(await owners(), [bob.id])
})

// ---- the user's own notifications (entity `notification`) ----

/** Sends a notification through the API to listed users (the one-statement way); the ids of `user`'s records of it. */
async function sendTo(admin: string, users: GivenUser[], title = 'Shift change') {
  await ok(
    call(app, admin, {
      method: 'POST',
      url: '/api/notifications',
      payload: { title, body: '<p>x</p>', url: '/shifts', user_ids: users.map((u) => u.id) },
    }),
  )
}
const notificationIdsOf = async (user: GivenUser, title: string) =>
  (
    await db
      .selectFrom('notifications')
      .select('id')
      .where('notifiable_id', '=', user.id)
      .where(sql<boolean>`data->>'title' = ${title}`)
      .execute()
  ).map((row) => row.id)

test('notifications: a send appears for its recipient only, as its own GET returns it; marks and a mark back come through', async () => {
  const { tenant, admin, alice, bob } = await world()
  const carol = await given.user(db, tenant)
  const aliceClient = await phone(alice)
  const bobClient = await phone(bob)

  await sendTo(admin, [alice, carol])
  const [id] = await notificationIdsOf(alice, 'Shift change')
  const sent = await aliceClient.next()
  assert.deepEqual(ops(sent), [`upsert notification:${id}`])
  const own = await ok(call(app, alice.token, { method: 'GET', url: `/api/notifications/${id}` }))
  assert.deepEqual(aliceClient.held().get(`notification:${id}`), own)
  assert.deepEqual(ops(await bobClient.next()), [])

  await put(alice.token, '/api/notifications', { read_at: new Date().toISOString() })
  assert.deepEqual(ops(await aliceClient.next()), [`upsert notification:${id}`])
  assert.notEqual((aliceClient.held().get(`notification:${id}`) as { read_at: unknown }).read_at, null)
  await put(alice.token, `/api/notifications/${id}`, { read_at: null })
  assert.deepEqual(ops(await aliceClient.next()), [`upsert notification:${id}`])
  assert.equal((aliceClient.held().get(`notification:${id}`) as { read_at: unknown }).read_at, null)
  await put(alice.token, '/api/notifications/type/genericNotification', { seen_at: new Date().toISOString() })
  assert.deepEqual(ops(await aliceClient.next()), [`upsert notification:${id}`])
  // carol's marks are carol's: alice's feed does not carry them
  await put(carol.token, '/api/notifications', { read_at: new Date().toISOString() })
  assert.deepEqual(ops(await aliceClient.next()), [])
  assert.deepEqual(ops(await bobClient.next()), [])
})

test('notifications: a fan-out job, a confirmation marking them read, and a snapshot carry them', async () => {
  const { tenant, admin, alice, bob } = await world()
  const news = await channel(admin)
  const postId = await postIn(admin, news, 'Read me', { requires_reading_confirmation: true })
  const client = await phone(alice)
  const created = await runFanOut(db, {
    spec: {
      tenantId: tenant.id,
      type: 'infoboardPostCreated',
      targetableType: 'infoboardPost',
      targetableId: Number(postId),
      sourceKey: `test:${String(postId)}`,
      data: { title: 'New post', body: 'x', url: '/x' },
      recipients: { userIds: [alice.id, bob.id] },
    },
  })
  assert.equal(created, 2)
  const [id] = await notificationIdsOf(alice, 'New post')
  assert.deepEqual(ops(await client.next()), [`upsert notification:${id}`])

  const bobClient = await phone(bob)
  const before = client.held().get(`infoboardPost:${String(postId)}`) as { my_state: unknown }
  assert.deepEqual(before.my_state, { seen_at: null, confirmed_at: null })

  // the confirmation marks the notification read and changes the post's `my_state`: both come back
  await ok(call(app, alice.token, { method: 'POST', url: `/api/infoboard/posts/${String(postId)}/confirmation` }))
  const confirmed = await client.next()
  assert.deepEqual(ops(confirmed).sort(), [`upsert infoboardPost:${String(postId)}`, `upsert notification:${id}`])
  const marked = confirmed[0]!.changes.find((c) => c.entity === 'notification')!
  assert.ok(marked.op === 'upsert' && marked.data.read_at !== null)
  const own = await ok(call(app, alice.token, { method: 'GET', url: `/api/infoboard/posts/${String(postId)}` }))
  assert.deepEqual(client.held().get(`infoboardPost:${String(postId)}`), own)
  const mine = (own as { my_state: { seen_at: string | null; confirmed_at: string | null } }).my_state
  assert.ok(mine.confirmed_at !== null && mine.seen_at !== null, JSON.stringify(mine))
  // alice's state is alice's: bob's feed does not carry the post again
  assert.deepEqual(ops(await bobClient.next()), [])
  const snapshot = await snapshotState(app, alice.token)
  assert.ok(snapshot.has(`notification:${id}`))
})

test("a reader's own state: seen and confirmation re-send the post or the manual entry to that reader only", async () => {
  const { admin, alice, bob } = await world()
  const news = await channel(admin)
  const postId = await postIn(admin, news, 'Read me', { requires_reading_confirmation: true })
  const chapter = await post(admin, '/api/manuals/chapters', { title: 'Safety' })
  const { id: entryId } = await post(admin, `/api/manuals/chapters/${String(chapter.id)}/entries`, {
    title: 'Gloves',
    body: 'x',
    requires_reading_confirmation: true,
  })
  const aliceClient = await phone(alice)
  const bobClient = await phone(bob)
  const postKey = `infoboardPost:${String(postId)}`
  const entryKey = `manualEntry:${String(entryId)}`
  const stateOf = (k: string) => (aliceClient.held().get(k) as { my_state: Record<string, unknown> }).my_state
  const versionOf = (answers: FeedAnswer[], k: string) => {
    const change = answers.flatMap((a) => a.changes).find((c) => key(c) === k)
    assert.ok(change?.op === 'upsert', `an upsert of ${k}`)
    return change.version
  }
  const snapshotVersion = async (k: string) =>
    versionOf((await syncAll(app, alice.token, new Map(), { device: 'tablet' })).answers, k)
  const versionBefore = await snapshotVersion(postKey)

  // alice's seen or confirmation reaches her feed only, as the record's upsert; a repeat sends nothing
  const readOnlyAlice = async (url: string, key: string) => {
    await ok(call(app, alice.token, { method: 'POST', url }))
    const answer = await aliceClient.next()
    assert.deepEqual(ops(answer), [`upsert ${key}`])
    assert.deepEqual(ops(await bobClient.next()), [])
    await ok(call(app, alice.token, { method: 'POST', url }))
    assert.deepEqual(ops(await aliceClient.next()), [])
    return answer
  }
  const seen = await readOnlyAlice(`/api/infoboard/posts/${String(postId)}/seen`, postKey)
  assert.ok(stateOf(postKey).seen_at !== null && stateOf(postKey).confirmed_at === null, 'seen, not confirmed')
  assert.ok(versionOf(seen, postKey) > versionBefore, 'the version grows with the reader state')
  assert.equal(await snapshotVersion(postKey), versionOf(seen, postKey))

  await readOnlyAlice(`/api/infoboard/posts/${String(postId)}/confirmation`, postKey)
  assert.ok(stateOf(postKey).confirmed_at !== null, 'the post confirmed')

  await readOnlyAlice(`/api/manuals/entries/${String(entryId)}/seen`, entryKey)
  assert.ok(stateOf(entryKey).seen_at !== null, 'the entry seen')
  await readOnlyAlice(`/api/manuals/entries/${String(entryId)}/confirmation`, entryKey)
  assert.ok(stateOf(entryKey).confirmed_at !== null, 'the entry confirmed')

  // bob's own confirmation reaches bob, not alice; an edit of the post reaches both, each with their own state
  await ok(call(app, bob.token, { method: 'POST', url: `/api/infoboard/posts/${String(postId)}/confirmation` }))
  assert.deepEqual(ops(await bobClient.next()), [`upsert ${postKey}`])
  assert.deepEqual(ops(await aliceClient.next()), [])
  await put(admin, `/api/infoboard/posts/${String(postId)}`, { title: 'Read me, edited' })
  assert.deepEqual(ops(await aliceClient.next()), [`upsert ${postKey}`])
  assert.deepEqual(ops(await bobClient.next()), [`upsert ${postKey}`])
  assert.ok(stateOf(postKey).confirmed_at !== null, "the edited post keeps alice's confirmation")
})

test('notifications: a reset, the retention job and the retention sweep remove them as deleted', async () => {
  const { tenant, admin, alice, bob } = await world()
  const client = await phone(alice)
  const bobClient = await phone(bob)
  await sendTo(admin, [alice], 'One')
  await sendTo(admin, [alice], 'Two')
  await sendTo(admin, [alice], 'Three')
  const [one] = await notificationIdsOf(alice, 'One')
  const [two] = await notificationIdsOf(alice, 'Two')
  const [three] = await notificationIdsOf(alice, 'Three')
  assert.equal((await client.next()).flatMap((a) => a.changes).length, 3)

  // read long ago: the daily job (every tenant) and the tenant's sweep delete them
  await db
    .updateTable('notifications')
    .set({ read_at: new Date('2020-01-01') })
    .where('id', '=', one!)
    .execute()
  assert.ok((await purgeReadNotifications(db, 30)) >= 1)
  assert.deepEqual(ops(await client.next()), [`remove notification:${one} deleted`])
  await db
    .updateTable('notifications')
    .set({ read_at: new Date('2020-01-01') })
    .where('id', '=', two!)
    .execute()
  await createRetentionService({ db, config: testConfig(), log: pino({ level: 'silent' }) }).sweepTenant(tenant.id)
  assert.deepEqual(ops(await client.next()), [`remove notification:${two} deleted`])

  await del(admin, '/api/administration/notifications/reset')
  assert.deepEqual(ops(await client.next()), [`remove notification:${three} deleted`])
  assert.deepEqual(ops(await bobClient.next()), [])
})

// ---- the user's own notification preferences (entity `notificationPreferences`, id: the user's) ----

test("notification preferences: the user's one record, as its GET returns it; a change reaches that user only", async () => {
  const { alice, bob } = await world()
  const aliceClient = await phone(alice)
  const bobClient = await phone(bob)
  const url = '/api/users/current/notification-preferences'
  const own = await ok<{ preferences: { notification_setting_id: number }[] }>(
    call(app, alice.token, { method: 'GET', url }),
  )
  assert.deepEqual(aliceClient.held().get(`notificationPreferences:${alice.id}`), own)
  assert.deepEqual(
    [...bobClient.held().keys()].filter((k) => k.startsWith('notificationPreferences:')),
    [`notificationPreferences:${bob.id}`],
  )

  const settingId = own.preferences[0]!.notification_setting_id
  await put(alice.token, url, {
    email_digest: 'daily',
    preferences: [{ notification_setting_id: settingId, push: false }],
  })
  assert.deepEqual(ops(await aliceClient.next()), [`upsert notificationPreferences:${alice.id}`])
  const held = aliceClient.held().get(`notificationPreferences:${alice.id}`) as {
    email_digest: string
    preferences: { notification_setting_id: number; push: boolean }[]
  }
  assert.equal(held.email_digest, 'daily')
  assert.equal(held.preferences.find((p) => p.notification_setting_id === settingId)?.push, false)
  assert.deepEqual(ops(await bobClient.next()), [])
})

// ---- infoboard comments (entity `infoboardComment`): visible iff their post is ----

test('infoboard comments follow their post: upsert on create, access_lost with the post, deleted with it; a plain post edit is no access change', async () => {
  const { tenant, admin, alice, bob } = await world()
  const news = await channel(admin)
  const other = await channel(admin, 'Other')
  const postId = await postIn(admin, news)
  const aliceClient = await phone(alice)
  const bobClient = await phone(bob)

  const comment = await post(admin, `/api/infoboard/posts/${postId}/comments`, { body: 'First!' })
  const commentKey = `infoboardComment:${String(comment.id)}`
  assert.deepEqual(ops(await aliceClient.next()), [`upsert ${commentKey}`])
  const listed = await ok<Record<string, unknown>[]>(
    call(app, alice.token, { method: 'GET', url: `/api/infoboard/posts/${postId}/comments` }),
  )
  assert.deepEqual(aliceClient.held().get(commentKey), listed[0])
  assert.deepEqual(ops(await bobClient.next()), [`upsert ${commentKey}`])

  const before = await accessChangeCount(tenant.id)
  await put(admin, `/api/infoboard/posts/${postId}`, { title: 'Edited' })
  assert.equal(await accessChangeCount(tenant.id), before)
  assert.deepEqual(ops(await aliceClient.next()), [`upsert infoboardPost:${postId}`])

  // the other channel is bob's only: the post moved there takes the comment from alice, not from bob
  await grant(admin, ['user', bob.id], ['folder', other])
  await aliceClient.next()
  await put(admin, `/api/infoboard/posts/${postId}`, { channel_id: other })
  assert.deepEqual(ops(await aliceClient.next()).sort(), [
    `remove ${commentKey} access_lost`,
    `remove infoboardPost:${postId} access_lost`,
  ])
  assert.deepEqual(ops(await bobClient.next()).sort(), [`upsert infoboardPost:${postId}`])

  await del(admin, `/api/infoboard/posts/${postId}`)
  assert.deepEqual(ops(await bobClient.next()).sort(), [
    `remove ${commentKey} deleted`,
    `remove infoboardPost:${postId} deleted`,
  ])
  assert.deepEqual(ops(await aliceClient.next()), [])
})

// ---- manual chapters (entity `manualChapter`) ----

test('manual chapters: upsert on create and rename as their GET returns them, access_lost by a grant to another user, deleted with their entries', async () => {
  const { admin, alice, bob } = await world()
  const aliceClient = await phone(alice)
  const bobClient = await phone(bob)
  const chapter = await post(admin, '/api/manuals/chapters', { title: 'Safety' })
  const chapterKey = `manualChapter:${String(chapter.id)}`
  assert.deepEqual(ops(await aliceClient.next()), [`upsert ${chapterKey}`])
  const own = await ok(call(app, alice.token, { method: 'GET', url: `/api/manuals/chapters/${String(chapter.id)}` }))
  assert.deepEqual(aliceClient.held().get(chapterKey), own)

  await put(admin, `/api/manuals/chapters/${String(chapter.id)}`, { title: 'Safety first' })
  assert.deepEqual(ops(await aliceClient.next()), [`upsert ${chapterKey}`])
  const entry = await post(admin, `/api/manuals/chapters/${String(chapter.id)}/entries`, { title: 'Gloves', body: 'x' })
  const entryKey = `manualEntry:${String(entry.id)}`
  assert.deepEqual(ops(await aliceClient.next()), [`upsert ${entryKey}`])

  await grant(admin, ['user', bob.id], ['manualChapter', Number(chapter.id)])
  assert.deepEqual(ops(await aliceClient.next()).sort(), [
    `remove ${chapterKey} access_lost`,
    `remove ${entryKey} access_lost`,
  ])
  assert.deepEqual(ops(await bobClient.next()).sort(), [`upsert ${chapterKey}`, `upsert ${entryKey}`])

  await del(admin, `/api/manuals/chapters/${String(chapter.id)}`)
  assert.deepEqual(ops(await bobClient.next()).sort(), [`remove ${chapterKey} deleted`, `remove ${entryKey} deleted`])
  assert.deepEqual(ops(await aliceClient.next()), [])
})

// ---- calendar events, forms and task executions (entities `calendarEvent`, `form`, `taskExecution`) ----

const CONTENT_READER = [...READER, 'calendar.view', 'forms.view', 'tasks.view', 'taskTemplates.view']

const plainContent = [
  {
    entity: 'calendarEvent',
    url: '/api/calendar/events',
    permission: 'calendar.view',
    body: { title: 'Inventory', starts_at: '2026-12-01 08:00:00', ends_at: '2026-12-01 12:00:00' },
    edit: { title: 'Inventory, longer', ends_at: '2026-12-01 14:00:00' },
  },
  {
    entity: 'form',
    url: '/api/forms',
    permission: 'forms.view',
    body: { name: 'Damage report' },
    edit: { name: 'Damage' },
  },
  {
    entity: 'taskExecution',
    url: '/api/tasks/executions',
    permission: 'tasks.view',
    body: { title: 'Count stock', due_at: '2026-12-01 18:00:00' },
    edit: { done_at: '2026-12-01 17:30:00' },
  },
]

for (const content of plainContent) {
  test(`${content.entity}: upsert as its GET returns it, an edit, access_lost by a grant to another user, deleted; never seen without ${content.permission}`, async () => {
    const { tenant, admin, alice, bob } = await world(CONTENT_READER)
    const without = CONTENT_READER.filter((permission) => permission !== content.permission)
    const carol = await given.user(db, tenant, { roleId: await given.role(db, tenant, without) })
    const aliceClient = await phone(alice)
    const bobClient = await phone(bob)
    const carolClient = await phone(carol)

    const created = await post(admin, content.url, content.body)
    const recordKey = `${content.entity}:${String(created.id)}`
    const item = `${content.url}/${String(created.id)}`
    assert.deepEqual(ops(await aliceClient.next()), [`upsert ${recordKey}`])
    assert.deepEqual(aliceClient.held().get(recordKey), await ok(call(app, alice.token, { method: 'GET', url: item })))

    await put(admin, item, content.edit)
    assert.deepEqual(ops(await aliceClient.next()), [`upsert ${recordKey}`])
    assert.deepEqual(aliceClient.held().get(recordKey), await ok(call(app, alice.token, { method: 'GET', url: item })))

    await grant(admin, ['user', bob.id], [content.entity, Number(created.id)])
    assert.deepEqual(ops(await aliceClient.next()), [`remove ${recordKey} access_lost`])
    assert.deepEqual(ops(await bobClient.next()), [`upsert ${recordKey}`])

    await del(admin, item)
    assert.deepEqual(ops(await bobClient.next()), [`remove ${recordKey} deleted`])
    assert.deepEqual(ops(await aliceClient.next()), [])
    assert.deepEqual(ops(await carolClient.next()), [])
    assert.ok(![...carolClient.held().keys()].some((held) => held.startsWith(`${content.entity}:`)))
  })
}

test('forms and task executions follow their folder: access_lost by a grant on it to another user, and when moved into a restricted one', async () => {
  const { admin, alice, bob } = await world(CONTENT_READER)
  const formFolder = Number((await post(admin, '/api/folders', { type: 'form', name: 'Reports' })).id)
  const taskFolder = Number((await post(admin, '/api/folders', { type: 'taskTemplate', name: 'Daily' })).id)
  const restricted = Number((await post(admin, '/api/folders', { type: 'taskTemplate', name: 'Board' })).id)
  await grant(admin, ['user', bob.id], ['folder', restricted])
  const form = await post(admin, '/api/forms', { name: 'Damage report', folder_id: formFolder })
  const task = await post(admin, '/api/tasks/executions', { title: 'Count stock', folder_id: taskFolder })
  const other = await post(admin, '/api/tasks/executions', { title: 'Open up' })
  const client = await phone(alice)
  for (const held of [
    `form:${String(form.id)}`,
    `taskExecution:${String(task.id)}`,
    `taskExecution:${String(other.id)}`,
  ])
    assert.ok(client.held().has(held), held)

  await grant(admin, ['user', bob.id], ['folder', formFolder])
  await grant(admin, ['user', bob.id], ['folder', taskFolder])
  assert.deepEqual(ops(await client.next()).sort(), [
    `remove folder:${formFolder} access_lost`,
    `remove folder:${taskFolder} access_lost`,
    `remove form:${String(form.id)} access_lost`,
    `remove taskExecution:${String(task.id)} access_lost`,
  ])

  await put(admin, `/api/tasks/executions/${String(other.id)}`, { folder_id: restricted })
  assert.deepEqual(ops(await client.next()), [`remove taskExecution:${String(other.id)} access_lost`])
})

test('a deleted folder detaches its forms, task executions and posts: each comes again with the reference gone', async () => {
  const { admin, alice } = await world(CONTENT_READER)
  const formFolder = Number((await post(admin, '/api/folders', { type: 'form', name: 'Reports' })).id)
  const taskFolder = Number((await post(admin, '/api/folders', { type: 'taskTemplate', name: 'Daily' })).id)
  const news = await channel(admin)
  const form = await post(admin, '/api/forms', { name: 'Damage report', folder_id: formFolder })
  const task = await post(admin, '/api/tasks/executions', { title: 'Count stock', folder_id: taskFolder })
  const postId = await postIn(admin, news)
  const client = await phone(alice)

  for (const folder of [formFolder, taskFolder, news]) await del(admin, `/api/folders/${String(folder)}`)
  // `next` compares the client's state with a fresh snapshot: a kept folder id would differ
  assert.deepEqual(
    ops(await client.next()).sort(),
    [
      `remove folder:${formFolder} deleted`,
      `remove folder:${news} deleted`,
      `remove folder:${taskFolder} deleted`,
      `upsert form:${String(form.id)}`,
      `upsert infoboardPost:${postId}`,
      `upsert taskExecution:${String(task.id)}`,
    ].sort(),
  )
  assert.equal((client.held().get(`form:${String(form.id)}`) as { folder_id: unknown }).folder_id, null)
})

const get = (token: string, url: string) => ok(call(app, token, { method: 'GET', url }))
const dataOf = (answers: FeedAnswer[], entity: string, id: number | string) =>
  answers
    .flatMap((a) => a.changes)
    .reverse()
    .find((c) => c.op === 'upsert' && c.entity === entity && c.id === id)?.data as Record<string, unknown> | undefined
const heldOf = (state: Map<string, unknown>, entity: string) =>
  [...state.keys()].filter((k) => k.startsWith(`${entity}:`)).sort()

test('user directory: with users.view every listed user as its GET returns it; creates, updates, deactivation, deletion and restore come through', async () => {
  const { tenant, admin, alice } = await world()
  const viewer = await given.role(db, tenant, ['users.view'])
  const carol = await given.user(db, tenant, { roleId: viewer })
  const carolPhone = await phone(carol)
  const alicePhone = await phone(alice)
  const listed = await get(carol.token, '/api/users?limit=100')
  const listedIds = (listed as unknown as Array<{ id: number }>).map((u) => `user:${u.id}`).sort()
  assert.deepEqual(heldOf(carolPhone.held(), 'user'), listedIds)
  assert.deepEqual(carolPhone.held().get(`user:${alice.id}`), await get(carol.token, `/api/users/${alice.id}`))
  assert.deepEqual(heldOf(alicePhone.held(), 'user'), [], 'no users.view, no directory')

  const created = await post(admin, '/api/users', {
    username: `dave${carol.id}`,
    password: 'secret-secret',
    first_name: 'Dave',
    last_name: 'Doe',
    role_id: viewer,
  })
  const dave = Number((created.data as { id: number }).id)
  const afterCreate = await carolPhone.next()
  assert.deepEqual(ops(afterCreate), [`upsert user:${dave}`])
  assert.deepEqual(dataOf(afterCreate, 'user', dave), await get(carol.token, `/api/users/${dave}`))

  await put(admin, `/api/users/${dave}`, { first_name: 'David' })
  const renamed = await carolPhone.next()
  assert.deepEqual(ops(renamed), [`upsert user:${dave}`])
  assert.equal(dataOf(renamed, 'user', dave)?.first_name, 'David')

  // deactivated: still listed (the list shows inactive users), as inactive
  await put(admin, `/api/users/${dave}`, { active: false })
  const deactivated = await carolPhone.next()
  assert.deepEqual(ops(deactivated), [`upsert user:${dave}`])
  assert.equal(dataOf(deactivated, 'user', dave)?.active, false)

  // deleted: no longer listed; the row and its own GET remain, so access_lost
  await del(admin, `/api/users/${dave}`)
  assert.deepEqual(ops(await carolPhone.next()), [`remove user:${dave} access_lost`])
  await post(admin, `/api/users/restore/${dave}`, {})
  assert.deepEqual(ops(await carolPhone.next()), [`upsert user:${dave}`])

  // alice, without users.view, never got any of it, not even as a remove
  assert.deepEqual(ops(await alicePhone.next()), [])
})

test('user directory: extended fields only for oneself and with users.viewDetails; a role losing it re-sends the directory without them', async () => {
  const { tenant, alice } = await world()
  await db.updateTable('users').set({ email: 'alice@example.com' }).where('id', '=', alice.id).execute()
  const viewer = await given.role(db, tenant, ['users.view'])
  const details = await given.role(db, tenant, ['users.view', 'users.viewDetails'])
  const carol = await given.user(db, tenant, { roleId: viewer, email: 'carol@example.com' })
  const erin = await given.user(db, tenant, { roleId: details })
  const carolPhone = await phone(carol)
  const erinPhone = await phone(erin)

  const carolSeesAlice = carolPhone.held().get(`user:${alice.id}`) as Record<string, unknown>
  assert.ok(!('email' in carolSeesAlice), 'a field hidden by permission is not in data')
  assert.deepEqual(carolSeesAlice, await get(carol.token, `/api/users/${alice.id}`))
  const carolSelf = carolPhone.held().get(`user:${carol.id}`) as Record<string, unknown>
  assert.equal(carolSelf.email, 'carol@example.com', "one's own record as its GET shows it")
  assert.deepEqual(carolSelf, await get(carol.token, `/api/users/${carol.id}`))
  const erinSeesAlice = erinPhone.held().get(`user:${alice.id}`) as Record<string, unknown>
  assert.equal(erinSeesAlice.email, 'alice@example.com')
  assert.deepEqual(erinSeesAlice, await get(erin.token, `/api/users/${alice.id}`))

  await put(tenant.adminToken, `/api/roles/${details}`, { permissions: ['users.view'] })
  const answers = await erinPhone.next()
  assert.ok(ops(answers).includes(`upsert user:${alice.id}`), ops(answers).join(', '))
  assert.ok(!('email' in (dataOf(answers, 'user', alice.id) ?? { email: 'missing' })))
  assert.deepEqual(ops(await carolPhone.next()), [], 'another role: nothing to re-send')
})

async function sharedItem(admin: string, grantees: number[] = []) {
  const event = await post(admin, '/api/calendar/events', {
    title: 'Inventory',
    starts_at: '2026-12-01 08:00:00',
    ends_at: '2026-12-01 12:00:00',
  })
  const item = await post(admin, '/api/administration/shared-items', {
    type: 'calendarEvent',
    redirect_type: 'redirect',
    targetable_type: 'calendarEvent',
    targetable_id: Number(event.id),
    ...(grantees.length > 0
      ? {
          entity_permissions: grantees.map((id) => ({
            key: 'view',
            permission_entity: 'user',
            permission_entity_id: id,
          })),
        }
      : {}),
  })
  return String(item.id)
}

test('shared items: the ones the user may open, as their GET returns them; grants, updates, deletion and restore come through', async () => {
  const { tenant, admin, alice, bob } = await world()
  const alicePhone = await phone(alice)
  const bobPhone = await phone(bob)

  const open = await sharedItem(admin)
  const mine = await sharedItem(admin, [alice.id])
  const created = await alicePhone.next()
  assert.deepEqual(ops(created).sort(), [`upsert sharedItem:${mine}`, `upsert sharedItem:${open}`].sort())
  assert.deepEqual(dataOf(created, 'sharedItem', mine), await get(alice.token, `/api/shared-items/${mine}`))
  assert.deepEqual(ops(await bobPhone.next()), [`upsert sharedItem:${open}`], 'bob never gets the one for alice')

  await put(admin, `/api/administration/shared-items/${open}`, {
    entity_permissions: [{ key: 'view', permission_entity: 'user', permission_entity_id: bob.id }],
  })
  assert.deepEqual(ops(await alicePhone.next()), [`remove sharedItem:${open} access_lost`])
  assert.deepEqual(ops(await bobPhone.next()), [`upsert sharedItem:${open}`])

  await put(admin, `/api/administration/shared-items/${mine}`, { redirect_type: 'none' })
  const updated = await alicePhone.next()
  assert.equal(dataOf(updated, 'sharedItem', mine)?.redirect_type, 'none')

  // a grant through the entity-permissions API: an access change for its grantee only
  const before = await accessChangeCount(tenant.id)
  const granted = await post(admin, '/api/entity-permissions', {
    key: 'view',
    permission_entity: 'user',
    permission_entity_id: bob.id,
    target_entity: 'sharedItem',
    target_entity_id: mine,
  })
  assert.equal(await accessChangeCount(tenant.id), before + 1)
  assert.deepEqual(ops(await bobPhone.next()), [`upsert sharedItem:${mine}`])
  await del(admin, `/api/entity-permissions/${String(granted.id)}`)
  assert.deepEqual(ops(await bobPhone.next()), [`remove sharedItem:${mine} access_lost`])

  await del(admin, `/api/administration/shared-items/${mine}`)
  assert.deepEqual(ops(await alicePhone.next()), [`remove sharedItem:${mine} deleted`])
  await post(admin, `/api/administration/shared-items/${mine}/restore`, {})
  assert.deepEqual(ops(await alicePhone.next()), [`upsert sharedItem:${mine}`])
  assert.deepEqual(ops(await bobPhone.next()), [], 'bob: never shown the restored item, not even as a remove')
})

test('shared items: the one-statement create wakes a long poll; a create on the transactional way (an automation listens) is recorded too', async () => {
  const { tenant, admin, alice } = await world()
  const alicePhone = await phone(alice)

  const started = Date.now()
  const waiting = syncRequest(app, alice.token, { cursor: alicePhone.cursor(), device: 'phone', wait: 20 })
  await new Promise((resolve) => setTimeout(resolve, 300))
  const first = await sharedItem(admin)
  const woken = (await waiting).json<FeedAnswer>()
  assert.deepEqual(ops([woken]), [`upsert sharedItem:${first}`])
  assert.ok(Date.now() - started < 10_000, 'answered on the create, not at the timeout')

  const actions = [{ type: 'webhook', config: { url: 'http://127.0.0.1:9/hook', method: 'POST', headers: {} } }]
  await db
    .insertInto('automations')
    .values({ tenant_id: tenant.id, name: 'listens', event: 'sharedItem.created', actions: JSON.stringify(actions) })
    .execute()
  const second = await sharedItem(admin, [alice.id])
  assert.deepEqual(
    ops(await alicePhone.next()).sort(),
    [`upsert sharedItem:${first}`, `upsert sharedItem:${second}`].sort(),
  )
})
