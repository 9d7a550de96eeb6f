import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { buildTestApp, call } from './helpers/build-test-app.js'
import { given, type GivenTenant, type GivenUser } from './helpers/given.js'
import { testDb } from './helpers/test-database.js'
import { pruneSyncClients } from '../src/platform/sync/sync-feed.js'

const db = testDb()

interface Change {
  op: 'upsert' | 'remove'
  entity: string
  id: number
  version?: string
  data?: Record<string, unknown>
  reason?: string
}
interface Answer {
  changes: Change[]
  cursor: string
  has_more: boolean
}

async function sync(token: string, query: Record<string, string | number> = {}): Promise<Answer> {
  const res = await call(await buildTestApp(), token, { method: 'GET', url: '/api/sync', query: stringify(query) })
  assert.equal(res.statusCode, 200, res.body)
  return res.json() as Answer
}
const stringify = (q: Record<string, string | number>) =>
  Object.fromEntries(Object.entries(q).map(([k, v]) => [k, String(v)]))

/** The client of the protocol: applies answers to a local map until `has_more` is false. */
class Replica {
  items = new Map<string, Record<string, unknown>>()
  cursor: string | undefined
  constructor(
    readonly token: string,
    readonly device = 'phone',
  ) {}
  async pull(limit?: number): Promise<Change[]> {
    const all: Change[] = []
    for (;;) {
      const answer = await sync(this.token, {
        device: this.device,
        ...(this.cursor ? { cursor: this.cursor } : {}),
        ...(limit ? { limit } : {}),
      })
      for (const change of answer.changes) {
        const key = `${change.entity}:${change.id}`
        if (change.op === 'upsert') this.items.set(key, change.data!)
        else {
          assert.equal(change.data, undefined, 'a remove carries no data')
          this.items.delete(key)
        }
      }
      all.push(...answer.changes)
      this.cursor = answer.cursor
      if (!answer.has_more) return all
    }
  }
  keys = () => [...this.items.keys()].sort()
}

async function post(tenant: GivenTenant, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await call(await buildTestApp(), tenant.adminToken, {
    method: 'POST',
    url: '/api/infoboard/posts',
    payload: body,
  })
  assert.equal(res.statusCode, 201, res.body)
  return res.json() as Record<string, unknown>
}

async function grant(tenant: GivenTenant, to: ['user' | 'role' | 'department', number], folder: number) {
  const res = await call(await buildTestApp(), tenant.adminToken, {
    method: 'POST',
    url: '/api/entity-permissions',
    payload: {
      key: 'view',
      permission_entity: to[0],
      permission_entity_id: to[1],
      target_entity: 'folder',
      target_entity_id: folder,
    },
  })
  assert.equal(res.statusCode, 201, res.body)
  return (res.json() as { id: number }).id
}

async function get(user: GivenUser, url: string) {
  const res = await call(await buildTestApp(), user.token, { method: 'GET', url })
  return { status: res.statusCode, body: res.json() as Record<string, unknown> }
}

/** A tenant with an infoboard channel holding a published post, and two employees. */
async function world() {
  const tenant = await given.tenant(db)
  const channel = await given.folder(db, tenant, { type: 'infoboardChannel', name: 'News' })
  const anna = await given.user(db, tenant)
  const ben = await given.user(db, tenant)
  const first = await post(tenant, { channel_id: channel, title: 'Welcome', body: '<p>Hi</p>' })
  return { tenant, channel, anna, ben, postId: Number(first.id) }
}

test('the first sync is everything the user may see, each exactly as its GET answers; drafts are not in it', async () => {
  const { tenant, channel, anna, postId } = await world()
  const draft = await post(tenant, { channel_id: channel, title: 'Draft', body: '<p>later</p>', published_at: null })
  const noteId = await given.notification(db, tenant, anna.id)
  const replica = new Replica(anna.token)
  await replica.pull()
  assert.ok(replica.items.has(`infoboardPost:${postId}`))
  assert.ok(replica.items.has(`folder:${channel}`))
  assert.ok(replica.items.has(`notification:${noteId}`))
  assert.ok(!replica.items.has(`infoboardPost:${String(draft.id)}`), 'a draft is not sent to a reader')
  // the data is the entity's own GET for this user
  assert.deepEqual(
    replica.items.get(`infoboardPost:${postId}`),
    (await get(anna, `/api/infoboard/posts/${postId}`)).body,
  )
  assert.deepEqual(replica.items.get(`folder:${channel}`), (await get(anna, `/api/folders/${channel}`)).body)
  assert.deepEqual(replica.items.get(`notification:${noteId}`), (await get(anna, `/api/notifications/${noteId}`)).body)
})

/** Where each entity's own GET is (comments have none: their list under the post). */
const ITEM_URL: Record<string, (id: number | string, data: Record<string, unknown>) => string> = {
  notification: (id) => `/api/notifications/${id}`,
  folder: (id) => `/api/folders/${id}`,
  infoboardPost: (id) => `/api/infoboard/posts/${id}`,
  manualChapter: (id) => `/api/manuals/chapters/${id}`,
  manualEntry: (id) => `/api/manuals/entries/${id}`,
  calendarEvent: (id) => `/api/calendar/events/${id}`,
  taskExecution: (id) => `/api/tasks/executions/${id}`,
  form: (id) => `/api/forms/${id}`,
  filemanagerDirectory: (id) => `/api/filemanager/directories/${id}`,
  filemanagerFile: (id) => `/api/filemanager/files/${id}`,
}

test('every entity of the feed: its data is exactly what its own GET answers the user', async () => {
  const { tenant, anna, postId } = await world()
  const role = await given.role(db, tenant, [
    'infoboard.view',
    'manuals.view',
    'calendar.view',
    'tasks.view',
    'forms.view',
    'filemanager.view',
    'notifications.view',
  ])
  await sql`update users set role_id = ${role} where tenant_id = ${tenant.id} and id = ${anna.id}`.execute(db)
  const server = await buildTestApp()
  const create = async (url: string, payload: Record<string, unknown>) => {
    const res = await call(server, tenant.adminToken, { method: 'POST', url, payload })
    assert.equal(res.statusCode, 201, `${url}: ${res.body}`)
    return (res.json() as { id: number }).id
  }
  const chapter = await create('/api/manuals/chapters', { title: 'Checkout' })
  await create(`/api/manuals/chapters/${chapter}/entries`, { title: 'Till', body: '<p>Count</p>' })
  await create('/api/calendar/events', {
    title: 'Inventory',
    starts_at: '2030-01-02 06:00:00',
    ends_at: '2030-01-02 14:00:00',
  })
  await create('/api/tasks/executions', { title: 'Restock', due_at: '2030-01-03 12:00:00' })
  await create('/api/filemanager/directories', { name: 'Marketing' })
  await create(`/api/infoboard/posts/${postId}/comments`, { body: 'Nice' })
  await given.notification(db, tenant, anna.id)
  const replica = new Replica(anna.token)
  await replica.pull()
  const entities = new Set([...replica.items.keys()].map((k) => k.split(':')[0]))
  for (const entity of [
    'notification',
    'folder',
    'infoboardPost',
    'infoboardComment',
    'manualChapter',
    'manualEntry',
    'calendarEvent',
    'taskExecution',
    'filemanagerDirectory',
  ])
    assert.ok(entities.has(entity), `${entity} is in the snapshot (${[...entities].join(', ')})`)
  for (const [key, data] of replica.items) {
    const [entity, id] = key.split(':')
    if (entity === 'infoboardComment') {
      const list = await get(anna, `/api/infoboard/posts/${String(data.post_id)}/comments`)
      assert.deepEqual(
        data,
        (list.body as unknown as Array<Record<string, unknown>>).find((c) => String(c.id) === id),
      )
      continue
    }
    const url = ITEM_URL[entity]
    assert.ok(url, `a GET for ${entity}`)
    const answer = await get(anna, url(id, data))
    assert.equal(answer.status, 200, `${key}: ${JSON.stringify(answer.body)}`)
    assert.deepEqual(data, answer.body, key)
  }
})

test('an idle sync answers nothing and writes nothing; a change answers only that change', async () => {
  const { tenant, channel, anna, postId } = await world()
  const replica = new Replica(anna.token)
  await replica.pull()
  // an idle sync writes nothing: checked over a window in which the tenant's clock did not move (other
  // test files' direct writes have no tenant and bump every clock: then the window is tried again)
  const state = async () =>
    (
      await sql<{ generation: number; seq: string }>`select c.generation, k.seq from sync_clients c
        join sync_clocks k on k.tenant_id = c.tenant_id
        where c.tenant_id = ${tenant.id} and c.user_id = ${anna.id} and c.device_id = 'phone'`.execute(db)
    ).rows[0]
  let checked = false
  for (let attempt = 0; attempt < 20 && !checked; attempt++) {
    await replica.pull() // catch up
    const before = await state()
    assert.deepEqual(await replica.pull(), [])
    const after = await state()
    if (after.seq !== before.seq) continue
    assert.equal(after.generation, before.generation, 'an idle sync writes nothing')
    checked = true
  }
  assert.ok(checked, 'no quiet window to check the idle sync in')

  const second = await post(tenant, { channel_id: channel, title: 'Second', body: '<p>2</p>' })
  const changes = await replica.pull()
  assert.deepEqual(
    changes.map((c) => [c.op, c.entity, c.id]),
    [['upsert', 'infoboardPost', Number(second.id)]],
  )
  // an edit is an upsert with a new version
  const edit = await call(await buildTestApp(), tenant.adminToken, {
    method: 'PUT',
    url: `/api/infoboard/posts/${postId}`,
    payload: { title: 'Welcome!' },
  })
  assert.equal(edit.statusCode, 200, edit.body)
  const edited = await replica.pull()
  assert.deepEqual(
    edited.map((c) => [c.op, c.id, c.data?.title]),
    [['upsert', postId, 'Welcome!']],
  )
})

test('access changes are changes: a grant excluding the user removes the channel and its posts (access_lost), only for her', async () => {
  const { tenant, channel, anna, ben, postId } = await world()
  const annas = new Replica(anna.token)
  const bens = new Replica(ben.token)
  await annas.pull()
  await bens.pull()
  // a view grant to Ben alone: the channel (and its posts) leave Anna's view
  const grantId = await grant(tenant, ['user', ben.id], channel)
  const lost = await annas.pull()
  assert.deepEqual(
    lost.map((c) => [c.op, c.entity, c.id, c.reason]).sort(),
    [
      ['remove', 'folder', channel, 'access_lost'],
      ['remove', 'infoboardPost', postId, 'access_lost'],
    ].sort(),
  )
  assert.deepEqual(await bens.pull(), [], "Ben's view did not change")
  // the grant removed: it comes back
  const removed = await call(await buildTestApp(), tenant.adminToken, {
    method: 'DELETE',
    url: `/api/entity-permissions/${grantId}`,
  })
  assert.equal(removed.statusCode, 204, removed.body)
  const back = await annas.pull()
  assert.deepEqual(back.map((c) => [c.op, c.entity, c.id]).sort(), [
    ['upsert', 'folder', channel],
    ['upsert', 'infoboardPost', postId],
  ])
})

test('a department grant: moving the user out of the department is an access_lost, a deleted post is deleted', async () => {
  const { tenant, channel, anna, postId } = await world()
  const department = await given.department(db, tenant, [anna.id])
  await grant(tenant, ['department', department], channel)
  const replica = new Replica(anna.token)
  await replica.pull()
  assert.ok(replica.items.has(`infoboardPost:${postId}`))
  const other = await post(tenant, { channel_id: channel, title: 'Other', body: '<p>x</p>' })
  await replica.pull()
  const deleted = await call(await buildTestApp(), tenant.adminToken, {
    method: 'DELETE',
    url: `/api/infoboard/posts/${String(other.id)}`,
  })
  assert.equal(deleted.statusCode, 204, deleted.body)
  assert.deepEqual(
    (await replica.pull()).map((c) => [c.op, c.id, c.reason]),
    [['remove', Number(other.id), 'deleted']],
  )
  await sql`delete from department_users where tenant_id = ${tenant.id} and user_id = ${anna.id}`.execute(db)
  assert.deepEqual((await replica.pull()).map((c) => [c.op, c.entity, c.id, c.reason]).sort(), [
    ['remove', 'folder', channel, 'access_lost'],
    ['remove', 'infoboardPost', postId, 'access_lost'],
  ])
})

test('no leak: what was never visible never appears, not even as a remove; a lost module permission empties the entity', async () => {
  const { tenant, channel, anna, ben, postId } = await world()
  const secret = await given.folder(db, tenant, { type: 'infoboardChannel', name: 'Board' })
  await grant(tenant, ['user', ben.id], secret)
  const hidden = await post(tenant, { channel_id: secret, title: 'Board only', body: '<p>s</p>' })
  const replica = new Replica(anna.token)
  const first = await replica.pull()
  const names = (changes: Change[]) => changes.map((c) => `${c.entity}:${c.id}`)
  assert.ok(!names(first).includes(`folder:${secret}`))
  assert.ok(!names(first).includes(`infoboardPost:${String(hidden.id)}`))
  // deleting the hidden post: no remove for a reader who never had it
  await call(await buildTestApp(), tenant.adminToken, {
    method: 'DELETE',
    url: `/api/infoboard/posts/${String(hidden.id)}`,
  })
  assert.deepEqual(await replica.pull(), [])
  // her role loses infoboard.view: the posts go (access_lost), the channel folder goes too
  const role = await given.role(db, tenant, ['notifications.view'])
  await sql`update users set role_id = ${role} where tenant_id = ${tenant.id} and id = ${anna.id}`.execute(db)
  const lost = await replica.pull()
  assert.ok(
    lost.some((c) => c.op === 'remove' && c.id === postId && c.reason === 'access_lost'),
    JSON.stringify(lost),
  )
  assert.ok(lost.every((c) => c.op === 'remove' && c.reason === 'access_lost' && c.data === undefined))
  void channel
})

test("a request's write bumps only its own tenant's clock, not another tenant's", async () => {
  const a = await world()
  const b = await world()
  const control = await world()
  await new Replica(a.anna.token).pull()
  await new Replica(b.anna.token).pull()
  await new Replica(control.anna.token).pull()
  // read together: a write with no tenant (another test file's) bumps every clock in one statement
  const clocks = async () => {
    const { rows } = await sql<{ tenant_id: string; seq: string }>`select tenant_id, seq from sync_clocks
      where tenant_id in (${a.tenant.id}, ${b.tenant.id}, ${control.tenant.id})`.execute(db)
    const of = (t: GivenTenant) => Number(rows.find((r) => Number(r.tenant_id) === t.id)!.seq)
    return { a: of(a.tenant), b: of(b.tenant), control: of(control.tenant) }
  }
  const before = await clocks()
  await post(a.tenant, { channel_id: a.channel, title: 'Only A', body: '<p>a</p>' })
  const after = await clocks()
  const moved = (k: 'a' | 'b' | 'control') => after[k] - before[k]
  assert.equal(moved('b'), moved('control'), "tenant B's clock moved only with every tenant's")
  assert.equal(moved('a'), moved('control') + 1, "tenant A's clock moved once more, for its write")
})

test('paging: a small limit sends the snapshot in pages that add up to the same view', async () => {
  const { tenant, channel, anna } = await world()
  for (let i = 0; i < 6; i++) await post(tenant, { channel_id: channel, title: `P${i}`, body: '<p>p</p>' })
  const paged = new Replica(anna.token, 'paged')
  await paged.pull(2)
  const whole = new Replica(anna.token, 'whole')
  await whole.pull()
  assert.deepEqual(paged.keys(), whole.keys())
  assert.ok(paged.keys().length >= 8)
})

test('cursors: invalid, another user, superseded, older than the retention → 410 sync_reset (problem+json)', async () => {
  const { tenant, anna, ben } = await world()
  const server = await buildTestApp()
  const expectReset = async (token: string, cursor: string, device = 'phone') => {
    const res = await call(server, token, { method: 'GET', url: '/api/sync', query: { cursor, device } })
    assert.equal(res.statusCode, 410, res.body)
    assert.match(String(res.headers['content-type']), /application\/problem\+json/)
    assert.equal((res.json() as { code: string }).code, 'sync_reset')
  }
  await expectReset(anna.token, 'garbage')
  await expectReset(anna.token, `sync1.${Buffer.from('{"t":1,"u":1,"c":1,"g":1,"s":1}').toString('base64url')}`)
  const first = await sync(anna.token, { device: 'phone' })
  await expectReset(ben.token, first.cursor)
  // a new snapshot on the same device supersedes the older cursor
  await sync(anna.token, { device: 'phone' })
  await expectReset(anna.token, first.cursor)
  // too old: the client record was last synced beyond the retention
  const fresh = await sync(anna.token, { device: 'tablet' })
  await sql`update sync_clients set synced_at = now() - interval '400 days'
    where tenant_id = ${tenant.id} and user_id = ${anna.id} and device_id = 'tablet'`.execute(db)
  await expectReset(anna.token, fresh.cursor, 'tablet')
  // the retention job deletes the device's record (and what it was sent), and only that one
  assert.equal((await pruneSyncClients(db, 30)) >= 1, true)
  const left = await sql<{ device_id: string }>`select device_id from sync_clients
    where tenant_id = ${tenant.id} and user_id = ${anna.id} order by device_id`.execute(db)
  assert.deepEqual(left.rows, [{ device_id: 'phone' }])
  // another device's cursor is not this device's
  const phone = await sync(anna.token, { device: 'phone' })
  await expectReset(anna.token, phone.cursor, 'tablet')
})

test('wait long-polls: the answer comes when another request changes something, not at the timeout', async () => {
  const { tenant, channel, anna } = await world()
  const replica = new Replica(anna.token)
  await replica.pull()
  const started = Date.now()
  const polling = (async () => {
    // a wake-up by a write without a tenant (another test file) answers early and empty: poll again
    for (;;) {
      const answer = await sync(anna.token, { device: 'phone', cursor: replica.cursor!, wait: 20 })
      replica.cursor = answer.cursor
      if (answer.changes.length > 0 || Date.now() - started > 15_000) return answer
    }
  })()
  await new Promise((resolve) => setTimeout(resolve, 300))
  const created = await post(tenant, { channel_id: channel, title: 'Live', body: '<p>now</p>' })
  const answer = await polling
  assert.ok(Date.now() - started < 10_000, `answered after ${Date.now() - started} ms`)
  assert.deepEqual(
    answer.changes.map((c) => [c.op, c.id]),
    [['upsert', Number(created.id)]],
  )
})
