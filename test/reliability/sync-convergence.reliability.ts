/**
 * Convergence of the offline feed (issue 43, docs/sync.md), a randomized model-based test: random
 * sequences of writes and access changes by an administrator — posts, manual entries, files and
 * calendar events created, edited, deleted; posts moved to another channel; comments and chapters
 * created; forms created in form folders; task executions created in task folders and moved;
 * notifications sent to a user, and marked read by that user; posts and manual entries (every other one
 * asking for a reading confirmation) seen and confirmed by a user, which changes their `my_state`
 * for that user only; directories created; channels, form
 * and task folders created, renamed, moved, and deleted with their subtree (the posts, forms and task
 * executions in it stay, detached); view grants on folders, posts, chapters, directories, events,
 * forms and task executions to users, a role and a department added and removed; the role's
 * permissions, the department's members and users' roles changed; users deactivated and
 * reactivated — interleaved with syncs of several clients (users × devices) from their latest
 * cursor, an older one they kept, or none. After every sync the state the client built from the
 * feed must equal a fresh full snapshot for that user, a remove must name something the client
 * holds (a record never visible never appears) and carry no data.
 *
 * SYNC_RUNS (default 2000) sequences per run, SYNC_STEPS (default 30) steps each, checked by
 * SYNC_PROCESSES (default 2) processes of SYNC_LANES (default 2) concurrent lanes each (lane i of process
 * p with seed SYNC_SEED + p × lanes + i); a failure prints its lane's seed, to replay with
 * SYNC_PROCESSES=1 SYNC_LANES=1, and the shrunk sequence. One process is bound by its own event loop
 * (the app runs in it, about 0.22 s per sequence with two lanes on the 2-core machine); two use the
 * second core (0.155 s: 2000 sequences in about 5 minutes alone). What remains per sequence is the work
 * checked: a tenant of its own with a known start (a sequence must replay alone, so worlds are not
 * reused: a reset would touch every table and the change log), ~20 HTTP writes, and a fresh snapshot for
 * each sync, reused only while nothing was written since.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
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
import { FOLDER_TYPES, type FolderType, READER, type Step, step, USERS } from './support/sync-steps.js'

const db = testDb()
const seed = process.env.SYNC_SEED ? Number(process.env.SYNC_SEED) : Date.now() % 2_147_483_647
const runs = process.env.SYNC_RUNS ? Number(process.env.SYNC_RUNS) : 2000
const steps = process.env.SYNC_STEPS ? Number(process.env.SYNC_STEPS) : 30
const lanes = process.env.SYNC_LANES ? Number(process.env.SYNC_LANES) : 2
const processes = process.env.SYNC_PROCESSES ? Number(process.env.SYNC_PROCESSES) : 2

let app: FastifyInstance
before(async () => {
  if (processes > 1) return
  // no actor cache: a request that changes an actor (role, department, user) would wait 100+ ms for the
  // cross-node invalidation echo, a fifth of a sequence's time; the feed and its snapshot read the same actor
  ;({ app } = await appWithRouteTable({ AUTH_CACHE: 'false' }))
})
after(() => app?.close())

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
  const folders: Record<FolderType, number[]> = { infoboardChannel: [], form: [], taskTemplate: [] }
  /** Each live folder's parent as the model last set it: a deleted folder takes its subtree along. */
  const parentOf = new Map<number, number | null>()
  const posts: number[] = []
  const chapters: number[] = []
  const entries: number[] = []
  const directories: number[] = []
  const files: number[] = []
  const events: number[] = []
  const forms: number[] = []
  const tasks: number[] = []
  const grants: number[] = []
  const clients = new Map<string, Client>()
  /** Each user's fresh snapshot, kept while no write happened since it was taken (syncs change nothing a user sees). */
  const snapshots = new Map<number, ClientState>()
  const pick = <T>(list: T[], i: number) => (list.length === 0 ? undefined : list[i % list.length])
  const write = async (method: 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) => {
    const res = await call(app, admin, { method, url, payload })
    // refusals (a cycle, a deleted target) are part of the game; server errors are not
    assert.ok(res.statusCode < 500, `${method} ${url}: ${res.statusCode} ${res.body}`)
    return res.statusCode < 300 && res.statusCode !== 204 ? res.json<{ id: number }>() : undefined
  }
  const createFolder = async (type: FolderType, parent: number | null) => {
    const created = await write('POST', '/api/folders', { type, name: type, parent_id: parent })
    if (created) {
      folders[type].push(created.id)
      parentOf.set(created.id, parent)
    }
  }
  const inSubtree = (id: number, root: number): boolean => {
    for (let at: number | null | undefined = id; at != null; at = parentOf.get(at)) if (at === root) return true
    return false
  }
  const folderOption = (type: FolderType, index: number | null) => (index === null ? null : pick(folders[type], index))

  for (const type of FOLDER_TYPES) await createFolder(type, null)
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
    const expected = snapshots.get(s.user) ?? (await snapshotState(app, user.token))
    snapshots.set(s.user, expected)
    assert.deepEqual(
      plain(state),
      plain(expected),
      `user ${s.user} device ${device} synced from ${String(s.from)}: the feed's state differs from a fresh snapshot`,
    )
  }

  // every user's first device holds a snapshot from the start, and every client syncs on at the end:
  // a change the feed lost in between shows there, whatever the random syncs missed
  for (let user = 0; user < USERS; user++) await syncClient({ user, device: 0, from: 'none' })

  for (const s of sequence) {
    if (s.do !== 'sync') snapshots.clear()
    switch (s.do) {
      case 'createPost': {
        const channel = pick(folders.infoboardChannel, s.channel)
        if (channel === undefined) break
        const created = await write('POST', '/api/infoboard/posts', {
          channel_id: channel,
          title: 'p',
          body: 'x',
          requires_reading_confirmation: posts.length % 2 === 0,
        })
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
        const channel = pick(folders.infoboardChannel, s.channel)
        if (post && channel) await write('PUT', `/api/infoboard/posts/${post}`, { channel_id: channel })
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
      case 'read': {
        // the user's own state of the record (`my_state`): seen, or confirmed (422 when none is asked,
        // 404 when the user does not see the record)
        const item = s.on === 'post' ? pick(posts, s.item) : pick(entries, s.item)
        if (!active[s.user] || item === undefined) break
        const base = s.on === 'post' ? '/api/infoboard/posts' : '/api/manuals/entries'
        const res = await call(app, users[s.user]!.token, {
          method: 'POST',
          url: `${base}/${item}/${s.confirm ? 'confirmation' : 'seen'}`,
        })
        assert.ok(res.statusCode < 500, res.body)
        break
      }
      case 'createFolder': {
        const parent = folderOption(s.type, s.parent)
        if (parent !== undefined) await createFolder(s.type, parent)
        break
      }
      case 'renameFolder': {
        const folder = pick(folders[s.type], s.folder)
        if (folder) await write('PUT', `/api/folders/${folder}`, { name: `renamed ${Math.random()}` })
        break
      }
      case 'moveFolder': {
        // a parent other than the folder itself (a move under its own subtree is still tried, and refused)
        const folder = pick(folders[s.type], s.folder)
        const others = folders[s.type].filter((id) => id !== folder)
        const parent = s.parent === null ? null : pick(others, s.parent)
        if (folder === undefined || parent === undefined) break
        const res = await call(app, admin, {
          method: 'PUT',
          url: `/api/folders/${folder}`,
          payload: { parent_id: parent },
        })
        assert.ok(res.statusCode < 500, res.body)
        if (res.statusCode === 200) parentOf.set(folder, parent)
        break
      }
      case 'deleteFolder': {
        // the subtree goes; its posts, forms and task executions stay, detached (folder_id/channel_id null)
        const folder = pick(folders[s.type], s.folder)
        if (folder === undefined) break
        const res = await call(app, admin, { method: 'DELETE', url: `/api/folders/${folder}` })
        assert.ok(res.statusCode < 500, res.body)
        if (res.statusCode !== 204) break
        const live = folders[s.type]
        const gone = live.filter((id) => inSubtree(id, folder))
        live.splice(0, live.length, ...live.filter((id) => !gone.includes(id)))
        for (const id of gone) parentOf.delete(id)
        break
      }
      case 'createEntry': {
        const chapter = pick(chapters, s.chapter)!
        const created = await write('POST', `/api/manuals/chapters/${chapter}/entries`, {
          title: 'e',
          body: 'x',
          requires_reading_confirmation: entries.length % 2 === 0,
        })
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
      case 'createEvent': {
        const day = `2026-12-${String(1 + (events.length % 28)).padStart(2, '0')}`
        const body = { title: 'e', starts_at: `${day} 08:00:00`, ends_at: `${day} 12:00:00` }
        const created = await write('POST', '/api/calendar/events', body)
        if (created) events.push(created.id)
        break
      }
      case 'editEvent': {
        const event = pick(events, s.event)
        if (event) await write('PUT', `/api/calendar/events/${event}`, { title: `edited ${Math.random()}` })
        break
      }
      case 'deleteEvent': {
        const event = pick(events, s.event)
        if (event) await write('DELETE', `/api/calendar/events/${event}`)
        break
      }
      case 'createForm': {
        const folder = folderOption('form', s.folder)
        if (folder === undefined) break
        const created = await write('POST', '/api/forms', { name: 'f', folder_id: folder })
        if (created) forms.push(created.id)
        break
      }
      case 'createTask': {
        const folder = folderOption('taskTemplate', s.folder)
        if (folder === undefined) break
        const created = await write('POST', '/api/tasks/executions', { title: 't', folder_id: folder })
        if (created) tasks.push(created.id)
        break
      }
      case 'moveTask': {
        const task = pick(tasks, s.task)
        const folder = folderOption('taskTemplate', s.folder)
        if (task !== undefined && folder !== undefined)
          await write('PUT', `/api/tasks/executions/${task}`, { folder_id: folder })
        break
      }
      case 'grant': {
        const lists = {
          folder: FOLDER_TYPES.flatMap((type) => folders[type]),
          infoboardPost: posts,
          manualChapter: chapters,
          filemanagerDirectory: directories,
          calendarEvent: events,
          form: forms,
          taskExecution: tasks,
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

/** This file run again in `processes` processes, each with its share of the runs and seeds of its own. */
async function inProcesses(): Promise<void> {
  const outcomes = await Promise.all(
    Array.from({ length: processes }, (_, p) => {
      const share = Math.floor(runs / processes) + (p < runs % processes ? 1 : 0)
      const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename], {
        env: {
          // a test file of its own, reporting as text (not to this runner's serialized channel)
          ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_TEST_CONTEXT')),
          SYNC_PROCESSES: '1',
          SYNC_RUNS: String(share),
          SYNC_SEED: String((seed + p * lanes) % 2_147_483_647),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let output = ''
      child.stdout.on('data', (d) => (output += d))
      child.stderr.on('data', (d) => (output += d))
      return new Promise<{ p: number; code: number | null; output: string }>((resolve) =>
        child.on('close', (code) => resolve({ p, code, output })),
      )
    }),
  )
  for (const { p, code, output } of outcomes) {
    // a failed process's whole output (its seeds, the shrunk sequence); else the line naming its seed and runs
    const shown = code === 0 ? (output.match(/^.*sync convergence seed.*$/m)?.[0] ?? '') : output.trimEnd()
    console.log(shown.replace(/^/gm, `# process ${p}: `))
  }
  const failed = outcomes.filter((outcome) => outcome.code !== 0).map((outcome) => outcome.p)
  assert.deepEqual(failed, [], 'processes whose sequences failed (their output is above)')
}

test(
  'a client that applies the feed holds exactly what a fresh snapshot holds, after every sync',
  { timeout: 30 * 60_000 },
  async () => {
    console.log(
      `# sync convergence seed ${seed}, ${runs} runs × ${steps} steps in ${processes} processes of ${lanes} lanes (SYNC_SEED, SYNC_RUNS, SYNC_STEPS, SYNC_PROCESSES, SYNC_LANES)`,
    )
    if (processes > 1) return inProcesses()
    // lane i checks its share of the runs with seed + i, each sequence in a tenant of its own
    const outcomes = await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        const laneSeed = (seed + lane) % 2_147_483_647
        const numRuns = Math.floor(runs / lanes) + (lane < runs % lanes ? 1 : 0)
        const property = fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: steps, size: 'max' }), runSequence)
        return { laneSeed, numRuns, details: await fc.check(property, { numRuns, seed: laneSeed }) }
      }),
    )
    const failed = outcomes.filter((outcome) => outcome.details.failed)
    for (const { laneSeed, numRuns, details } of failed) {
      const error = details.errorInstance
      console.log(`# replay: SYNC_SEED=${laneSeed} SYNC_PROCESSES=1 SYNC_LANES=1 SYNC_RUNS=${numRuns}`)
      console.log(`# shrunk counterexample: ${JSON.stringify(details.counterexample)}`)
      console.log(`# its failure: ${error instanceof Error ? error.message : String(error)}`)
    }
    if (failed.length > 0) assert.fail(fc.defaultReportMessage(failed[0]!.details) ?? 'the property failed')
  },
)
