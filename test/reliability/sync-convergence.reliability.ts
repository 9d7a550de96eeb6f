/**
 * Convergence of the offline feed (issue 43, docs/sync.md), a randomized model-based test: random
 * sequences of writes and access changes by an administrator — posts, manual entries and files
 * created, edited, deleted; posts moved to another channel; comments and chapters created;
 * notifications sent to a user, and marked read by that user; directories created; channels created, renamed, moved; view grants to users, a role and a department
 * added and removed; the role's permissions, the department's members and users' roles changed;
 * users deactivated and reactivated — interleaved with syncs of several clients (users × devices)
 * from their latest cursor, an older one they kept, or none. After every sync the state the client
 * built from the feed must equal a fresh full snapshot for that user, a remove must name something
 * the client holds (a record never visible never appears) and carry no data.
 *
 * SYNC_RUNS (default 20) sequences per run, SYNC_STEPS (default 30) steps each, SYNC_SEED to replay;
 * a failure prints the shrunk sequence.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import fc from 'fast-check'
import { issueAccessToken } from '../../src/platform/auth/tokens.js'
import { call } from '../helpers/build-test-app.js'
import { fixture, multipart } from '../fixtures/users/forms.js'
import { given, type GivenUser } from '../helpers/given.js'
import {
  applyFeed,
  type ClientState,
  type FeedAnswer,
  plain,
  snapshotState,
  syncRequest,
} from '../helpers/sync-client.js'
import { testDb } from '../helpers/test-database.js'
import { appWithRouteTable } from './support/routes.js'

const db = testDb()
const seed = process.env.SYNC_SEED ? Number(process.env.SYNC_SEED) : Date.now() % 2_147_483_647
const runs = process.env.SYNC_RUNS ? Number(process.env.SYNC_RUNS) : 20
const steps = process.env.SYNC_STEPS ? Number(process.env.SYNC_STEPS) : 30
const READER = ['infoboard.view', 'manuals.view', 'filemanager.view']
const USERS = 3
const DEVICES = 2

let app: FastifyInstance
before(async () => {
  ;({ app } = await appWithRouteTable())
})
after(() => app.close())

const small = fc.nat({ max: 7 })
const userIndex = fc.nat({ max: USERS - 1 })
const grantee = fc.oneof(
  fc.record({ kind: fc.constant('user' as const), index: userIndex }),
  fc.constant({ kind: 'role' as const, index: 0 }),
  fc.constant({ kind: 'department' as const, index: 0 }),
)
const step = fc.oneof(
  { weight: 3, arbitrary: fc.record({ do: fc.constant('createPost' as const), channel: small }) },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('editPost' as const), post: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('deletePost' as const), post: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('createChannel' as const), parent: fc.option(small) }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('renameChannel' as const), channel: small }) },
  {
    weight: 1,
    arbitrary: fc.record({ do: fc.constant('moveChannel' as const), channel: small, parent: fc.option(small) }),
  },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('movePost' as const), post: small, channel: small }) },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('createComment' as const), post: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('createChapter' as const) }) },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('notify' as const), user: userIndex }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('markRead' as const), user: userIndex }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('createEntry' as const), chapter: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('deleteEntry' as const), entry: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('createDirectory' as const), parent: fc.option(small) }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('createFile' as const), directory: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('deleteFile' as const), file: small }) },
  {
    weight: 3,
    arbitrary: fc.record({
      do: fc.constant('grant' as const),
      on: fc.constantFrom('folder', 'infoboardPost', 'manualChapter', 'filemanagerDirectory'),
      target: small,
      to: grantee,
    }),
  },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('revoke' as const), grant: small }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('rolePermissions' as const), full: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      do: fc.constant('departmentMembers' as const),
      members: fc.subarray([...Array(USERS).keys()]),
    }),
  },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('userRole' as const), user: userIndex, reader: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({ do: fc.constant('userActive' as const), user: userIndex, active: fc.boolean() }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      do: fc.constant('sync' as const),
      user: userIndex,
      device: fc.nat({ max: DEVICES - 1 }),
      from: fc.oneof(fc.constant('latest' as const), fc.constant('none' as const), fc.nat({ max: 5 })),
    }),
  },
)
type Step = typeof step extends fc.Arbitrary<infer S> ? S : never

interface Client {
  /** (cursor, state) pairs the client went through, newest last; a real client keeps only the last. */
  history: Array<{ cursor: string; state: ClientState }>
}

/** One random sequence against a tenant of its own. */
async function runSequence(sequence: Step[]): Promise<void> {
  const tenant = await given.tenant(db)
  await given.exemptFromLimits(db, tenant)
  const admin = tenant.adminToken
  const reader = await given.role(db, tenant, READER)
  const narrow = await given.role(db, tenant, ['manuals.view'])
  const users: GivenUser[] = []
  for (let i = 0; i < USERS; i++) users.push(await given.user(db, tenant, { roleId: reader }))
  const active = users.map(() => true)
  const department = await given.department(db, tenant, [users[0]!.id])
  const channels: number[] = []
  const posts: number[] = []
  const chapters: number[] = []
  const entries: number[] = []
  const directories: number[] = []
  const files: number[] = []
  const grants: number[] = []
  const clients = new Map<string, Client>()
  const pick = <T>(list: T[], i: number) => (list.length === 0 ? undefined : list[i % list.length])
  const write = async (method: 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) => {
    const res = await call(app, admin, { method, url, payload })
    // refusals (a cycle, a deleted target) are part of the game; server errors are not
    assert.ok(res.statusCode < 500, `${method} ${url}: ${res.statusCode} ${res.body}`)
    return res.statusCode < 300 && res.statusCode !== 204 ? res.json<{ id: number }>() : undefined
  }

  channels.push((await write('POST', '/api/folders', { type: 'infoboardChannel', name: 'c0', parent_id: null }))!.id)
  chapters.push((await write('POST', '/api/manuals/chapters', { title: 'm0' }))!.id)
  directories.push((await write('POST', '/api/filemanager/directories', { name: 'd0' }))!.id)

  /** One client's sync (all pages) from its latest, an older or no cursor, checked against a fresh snapshot. */
  async function syncClient(s: { user: number; device: number; from: 'latest' | 'none' | number }) {
    if (!active[s.user]) return
    const user = users[s.user]!
    const device = `d${s.device}`
    const client = clients.get(`${s.user}/${device}`) ?? { history: [] }
    clients.set(`${s.user}/${device}`, client)
    const from =
      s.from === 'none' || client.history.length === 0
        ? undefined
        : s.from === 'latest'
          ? client.history.at(-1)
          : client.history[Math.max(0, client.history.length - 1 - s.from)]
    let cursor = from?.cursor
    let state = from?.state ?? new Map()
    for (;;) {
      const res = await syncRequest(app, user.token, { cursor, device })
      if (res.statusCode === 410 && cursor !== undefined) {
        // a cursor the server no longer keeps: the client starts over, as docs/sync.md says
        cursor = undefined
        state = new Map()
        continue
      }
      assert.equal(res.statusCode, 200, res.body)
      const answer = res.json<FeedAnswer>()
      state = applyFeed(cursor === undefined ? new Map() : state, answer)
      cursor = answer.cursor
      if (!answer.has_more) break
    }
    client.history.push({ cursor, state })
    assert.deepEqual(
      plain(state),
      plain(await snapshotState(app, user.token)),
      `user ${s.user} device ${device} synced from ${String(s.from)}: the feed's state differs from a fresh snapshot`,
    )
  }

  // every user's first device holds a snapshot from the start, and every client syncs on at the end:
  // a change the feed lost in between shows there, whatever the random syncs missed
  for (let user = 0; user < USERS; user++) await syncClient({ user, device: 0, from: 'none' })

  for (const s of sequence) {
    switch (s.do) {
      case 'createPost': {
        const channel = pick(channels, s.channel)!
        const created = await write('POST', '/api/infoboard/posts', { channel_id: channel, title: 'p', body: 'x' })
        if (created) posts.push(created.id)
        break
      }
      case 'editPost': {
        const post = pick(posts, s.post)
        if (post) await write('PUT', `/api/infoboard/posts/${post}`, { title: `edited ${Math.random()}` })
        break
      }
      case 'deletePost': {
        const post = pick(posts, s.post)
        if (post) await write('DELETE', `/api/infoboard/posts/${post}`)
        break
      }
      case 'movePost': {
        const post = pick(posts, s.post)
        if (post) await write('PUT', `/api/infoboard/posts/${post}`, { channel_id: pick(channels, s.channel)! })
        break
      }
      case 'createComment': {
        const post = pick(posts, s.post)
        if (post) await write('POST', `/api/infoboard/posts/${post}/comments`, { body: 'c' })
        break
      }
      case 'createChapter': {
        const created = await write('POST', '/api/manuals/chapters', { title: 'm' })
        if (created) chapters.push(created.id)
        break
      }
      case 'notify':
        await write('POST', '/api/notifications', { title: 'n', body: 'x', url: '/x', user_ids: [users[s.user]!.id] })
        break
      case 'markRead': {
        if (!active[s.user]) break
        const res = await call(app, users[s.user]!.token, {
          method: 'PUT',
          url: '/api/notifications',
          payload: { read_at: new Date().toISOString() },
        })
        assert.ok(res.statusCode < 500, res.body)
        break
      }
      case 'createChannel': {
        const parent = s.parent === null ? null : pick(channels, s.parent)!
        const created = await write('POST', '/api/folders', { type: 'infoboardChannel', name: 'c', parent_id: parent })
        if (created) channels.push(created.id)
        break
      }
      case 'renameChannel':
        await write('PUT', `/api/folders/${pick(channels, s.channel)!}`, { name: `renamed ${Math.random()}` })
        break
      case 'moveChannel': {
        const parent = s.parent === null ? null : pick(channels, s.parent)!
        await write('PUT', `/api/folders/${pick(channels, s.channel)!}`, { parent_id: parent })
        break
      }
      case 'createEntry': {
        const chapter = pick(chapters, s.chapter)!
        const created = await write('POST', `/api/manuals/chapters/${chapter}/entries`, { title: 'e', body: 'x' })
        if (created) entries.push(created.id)
        break
      }
      case 'deleteEntry': {
        const entry = pick(entries, s.entry)
        if (entry) await write('DELETE', `/api/manuals/entries/${entry}`)
        break
      }
      case 'createDirectory': {
        const parent = s.parent === null ? null : pick(directories, s.parent)!
        const created = await write('POST', '/api/filemanager/directories', { name: 'd', parent_id: parent })
        if (created) directories.push(created.id)
        break
      }
      case 'createFile': {
        const directory = pick(directories, s.directory)!
        const body = multipart(
          { directory_id: String(directory) },
          { file: { bytes: fixture('pixel.png'), filename: 'f.png', contentType: 'image/png' } },
        )
        const res = await call(app, admin, {
          method: 'POST',
          url: '/api/filemanager/files',
          payload: body.payload,
          headers: body.headers,
        })
        assert.ok(res.statusCode < 500, res.body)
        if (res.statusCode === 201) files.push(res.json<{ id: number }>().id)
        break
      }
      case 'deleteFile': {
        const file = pick(files, s.file)
        if (file) await write('DELETE', `/api/filemanager/files/${file}`)
        break
      }
      case 'grant': {
        const lists = {
          folder: channels,
          infoboardPost: posts,
          manualChapter: chapters,
          filemanagerDirectory: directories,
        }
        const list = lists[s.on]
        const target = pick(list, s.target)
        if (target === undefined) break
        const to = s.to.kind === 'user' ? users[s.to.index]!.id : s.to.kind === 'role' ? reader : department
        const created = await write('POST', '/api/entity-permissions', {
          key: 'view',
          permission_entity: s.to.kind,
          permission_entity_id: to,
          target_entity: s.on,
          target_entity_id: target,
        })
        if (created) grants.push(created.id)
        break
      }
      case 'revoke': {
        const grant = pick(grants, s.grant)
        if (grant) await write('DELETE', `/api/entity-permissions/${grant}`)
        break
      }
      case 'rolePermissions':
        await write('PUT', `/api/roles/${reader}`, { permissions: s.full ? READER : ['manuals.view'] })
        break
      case 'departmentMembers':
        await write('PUT', `/api/departments/${department}`, { user_ids: s.members.map((i) => users[i]!.id) })
        break
      case 'userRole':
        await write('PUT', `/api/users/${users[s.user]!.id}`, { role_id: s.reader ? reader : narrow })
        break
      case 'userActive': {
        await write('PUT', `/api/users/${users[s.user]!.id}`, { active: s.active })
        if (s.active && !active[s.user])
          users[s.user]!.token = (await issueAccessToken(db, tenant.id, users[s.user]!.id, 1)).token
        active[s.user] = s.active
        break
      }
      case 'sync':
        await syncClient(s)
        break
    }
  }
  for (const name of clients.keys()) {
    const [user, device] = name.split('/d').map(Number)
    await syncClient({ user: user!, device: device!, from: 'latest' })
  }
}

test(
  'a client that applies the feed holds exactly what a fresh snapshot holds, after every sync',
  { timeout: 30 * 60_000 },
  async () => {
    console.log(`# sync convergence seed ${seed}, ${runs} runs × ${steps} steps (SYNC_SEED, SYNC_RUNS, SYNC_STEPS)`)
    const details = await fc.check(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: steps, size: 'max' }), runSequence),
      { numRuns: runs, seed },
    )
    if (details.failed) {
      const error = details.errorInstance
      console.log(`# shrunk counterexample: ${JSON.stringify(details.counterexample)}`)
      console.log(`# its failure: ${error instanceof Error ? error.message : String(error)}`)
      assert.fail(fc.defaultReportMessage(details) ?? 'the property failed')
    }
  },
)
