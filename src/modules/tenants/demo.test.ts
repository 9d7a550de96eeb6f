import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../app.js'
import { runDemo } from '../../demo.js'
import type { DemoResult } from './index.js'
import { call, testConfig } from '../../../test/helpers/build-test-app.js'
import { privateTestDatabase } from '../../../test/helpers/test-database.js'

// The demo tenant's slug is unique per database: this file works on a database of its own.
let database: Awaited<ReturnType<typeof privateTestDatabase>>
let app: FastifyInstance
let demo: DemoResult
const tokens: Record<string, string> = {}
const config = testConfig({ AUTH_CACHE: 'false' })
const handle = () => ({ db: database.db, directUrl: database.url })

async function login(username: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: 'demo', username, password: demo.password },
  })
  assert.equal(res.statusCode, 200, res.body)
  return res.json().access_token
}

async function list(username: string, url: string): Promise<any[]> {
  const res = await call(app, tokens[username], { method: 'GET', url })
  assert.equal(res.statusCode, 200, `${username} GET ${url}: ${res.body}`)
  const body = res.json()
  return Array.isArray(body) ? body : body.data
}

before(async () => {
  database = await privateTestDatabase('demo')
  demo = await runDemo(config, handle())
  app = await buildApp({ config, db: database.db })
  for (const username of ['admin', 'anna', 'ben', 'chloe', 'deniz']) tokens[username] = await login(username)
})
after(async () => {
  await app?.close()
  await database?.close()
})

test('the demo is created once, and --reset recreates it', async () => {
  assert.equal(demo.created, true)
  assert.match(demo.openSharedItemId ?? '', /^[0-9a-f-]{36}$/)
  assert.equal((await runDemo(config, handle())).created, false, 'a second run changes nothing')
  const again = await runDemo(config, handle(), { reset: true })
  assert.equal(again.created, true)
  assert.notEqual(again.password, demo.password)
  demo = again
  for (const username of Object.keys(tokens)) tokens[username] = await login(username)
})

/** Every list of the spec, with what each user must (and must not) find in the demo tenant. */
test('every list returns the demo rows a user may see, and none they may not', async () => {
  const names = async (username: string, url: string, field = 'name') =>
    (await list(username, url)).map((row) => row[field]).sort()

  // folders: translated names; the warehouse channel is restricted to its department
  assert.ok(
    (await names('anna', '/api/folders?filter[type]=infoboardChannel')).includes('Neuigkeiten'),
    'anna reads German',
  )
  assert.deepEqual(await names('ben', '/api/folders?filter[type]=infoboardChannel'), ['News'])
  assert.deepEqual(await names('chloe', '/api/folders?filter[type]=infoboardChannel'), ['News', 'Warehouse internal'])
  assert.equal((await list('admin', '/api/folders')).length, 12, 'every folder type is in the tree')
  assert.deepEqual(await names('ben', '/api/folders?filter[type]=survey'), [], 'no surveys.view')
  assert.deepEqual(
    await names('deniz', '/api/folders?filter[type]=survey'),
    ['Umfragen'],
    'shift leads see the survey folder',
  )

  // infoboard posts and the notifications they produced
  const annaPosts = await names('anna', '/api/infoboard/posts', 'title')
  assert.equal(annaPosts.length, 3)
  assert.ok(!annaPosts.includes('Forklift inspection on Monday'))
  assert.ok((await names('chloe', '/api/infoboard/posts', 'title')).includes('Forklift inspection on Monday'))
  for (const [username, read] of [
    ['anna', 1],
    ['ben', 0],
    ['chloe', 2],
  ] as const) {
    const all = await list(username, '/api/notifications')
    const unread = await list(username, '/api/notifications?filter[read_at][null]=true')
    assert.ok(unread.length > 0, `${username} has unread notifications`)
    assert.equal(all.length - unread.length, read, `${username} has read ${read}`)
    const titles = all.map((n) => n.data?.title ?? n.title)
    assert.equal(
      titles.includes('Forklift inspection on Monday'),
      username === 'chloe',
      `${username}: warehouse post notified only to its department`,
    )
  }

  // files: the management directory and its file are for shift leads only
  assert.deepEqual(await names('anna', '/api/filemanager/directories'), ['Marketing'])
  assert.deepEqual(await names('deniz', '/api/filemanager/directories'), ['Management', 'Marketing'])
  assert.deepEqual(await names('anna', '/api/filemanager/files'), ['Opening hours.pdf', 'Shop window.png'])
  assert.equal((await list('deniz', '/api/filemanager/files')).length, 3)

  // shared items restricted by direct grants: the post to Store Berlin, the task to anna
  const sharedTypes = async (username: string) => await names(username, '/api/shared-items', 'type')
  assert.ok(
    (await sharedTypes('anna')).includes('infoboardPost') && (await sharedTypes('anna')).includes('taskExecution'),
  )
  assert.ok(
    (await sharedTypes('ben')).includes('infoboardPost') && !(await sharedTypes('ben')).includes('taskExecution'),
  )
  assert.ok(
    !(await sharedTypes('chloe')).includes('infoboardPost') && !(await sharedTypes('chloe')).includes('taskExecution'),
  )
  const adminItems = await list('admin', '/api/administration/shared-items')
  assert.equal(new Set(adminItems.map((item) => item.type)).size, 10, 'a shared item of every type')
  assert.deepEqual(
    new Set(adminItems.map((item) => item.redirect_type)),
    new Set(['none', 'redirect', 'redirectWithGrantToken']),
  )
  const opened = await call(app, tokens.anna, { method: 'GET', url: `/shared/${demo.openSharedItemId}` })
  assert.equal(opened.statusCode, 302)

  // every other list of the spec has rows for an employee (and the admin lists for the admin)
  assert.equal((await list('admin', '/api/roles')).length, 3, 'Administrator, Employee, Shift lead')
  for (const url of [
    '/api/users',
    '/api/departments',
    '/api/languages',
    '/api/notification-settings',
    '/api/calendar/events',
    '/api/manuals/chapters',
    '/api/forms',
    '/api/tasks/executions',
    '/api/infoboard/posts',
  ]) {
    assert.ok((await list('ben', url)).length > 0, `ben: ${url}`)
  }
  const [chapter] = await list('ben', '/api/manuals/chapters')
  assert.equal((await list('ben', `/api/manuals/chapters/${chapter.id}/entries`)).length, 2)
  const party = (await list('ben', '/api/infoboard/posts')).find((p) => p.title === 'Summer party')
  assert.equal((await list('ben', `/api/infoboard/posts/${party.id}/comments`)).length, 1)
  const [form] = await list('admin', '/api/forms')
  assert.equal((await list('admin', `/api/forms/${form.id}/messages`)).length, 2)
  const automations = await list('admin', '/api/administration/automations')
  assert.equal(automations.length, 1)
  assert.equal(automations[0].active, false, 'the webhook waits for an operator')
  const grants = await list(
    'admin',
    `/api/entity-permissions/filemanagerDirectory/${(await list('deniz', '/api/filemanager/directories')).find((d) => d.name === 'Management').id}`,
  )
  assert.equal(grants.length, 1)
  for (const url of ['/api/administration/automations', '/api/administration/shared-items', '/api/users/deleted']) {
    assert.equal((await call(app, tokens.ben, { method: 'GET', url })).statusCode, 403, `ben may not list ${url}`)
  }
})

test('nodes starting together on a database without a demo make one demo, and none of them fails', async () => {
  await database.db.deleteFrom('tenants').where('slug', '=', 'demo').execute()
  const results = await Promise.all([runDemo(config, handle()), runDemo(config, handle()), runDemo(config, handle())])

  assert.deepEqual(results.map((result) => result.created).sort(), [false, false, true])
  const demos = await database.db.selectFrom('tenants').select('settings').where('slug', '=', 'demo').execute()
  assert.equal(demos.length, 1)
  assert.equal((demos[0]!.settings as { demo?: string }).demo, 'complete')
  demo = results.find((result) => result.created)!
  assert.ok(await login('anna'), 'the demo that stands is the one whose password was printed')
})
