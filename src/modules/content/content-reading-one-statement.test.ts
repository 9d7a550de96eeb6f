import assert from 'node:assert/strict'
import { test } from 'node:test'
import { call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { transactions, watchedApp, writes } from '../../../test/helpers/watched-app.js'

// A reader's own state of a post (`my_state`) is read with the page, not by a second statement
// (RelationDef.inline): the employee's "to confirm" list is one round trip (issue 41, S16).
const db = testDb()
const { app, watch } = await watchedApp()
test.after(() => app.close())

const readsOf = (statements: string[]) => statements.filter((text) => /\bfrom\s+"?infoboard_posts"?/i.test(text))
const readsOfStates = (statements: string[]) => statements.filter((text) => /\bcontent_reads\b/.test(text))

test("a list and a show read each post with the reader's own state in one statement", async () => {
  const tenant = await given.tenant(db)
  const channel = await given.folder(db, tenant, { type: 'infoboardChannel' })
  const anna = await given.user(db, tenant)
  const ids: number[] = []
  for (const title of ['Cold room', 'Opening hours', 'Safety']) {
    const res = await call(app, tenant.adminToken, {
      method: 'POST',
      url: '/api/infoboard/posts',
      payload: { channel_id: channel, title, body: '<p>x</p>', requires_reading_confirmation: true },
    })
    assert.equal(res.statusCode, 201, res.body)
    ids.push(Number(res.json().id))
  }
  const [confirmed, seen] = ids
  const done = await call(app, anna.token, { method: 'POST', url: `/api/infoboard/posts/${confirmed}/confirmation` })
  assert.equal(done.statusCode, 201, done.body)
  const opened = await call(app, anna.token, { method: 'POST', url: `/api/infoboard/posts/${seen}/seen` })
  assert.ok([200, 201].includes(opened.statusCode), opened.body)

  for (const url of ['/api/infoboard/posts?filter[confirmation]=pending', '/api/infoboard/posts']) {
    await call(app, anna.token, { method: 'GET', url }) // the actor's first read may look the token up
    const { result, statements } = await watch(() => call(app, anna.token, { method: 'GET', url }))
    assert.equal(result.statusCode, 200, result.body)
    const sent = `${url} sent:\n${statements.join('\n---\n')}`
    assert.equal(readsOf(statements).length, 1, sent)
    assert.equal(readsOfStates(statements).length, 1, `the states are read by the posts' statement: ${sent}`)
    const states = new Map(
      (result.json() as Array<{ id: number; my_state: { seen_at: string | null; confirmed_at: string | null } }>).map(
        (post) => [Number(post.id), post.my_state],
      ),
    )
    if (url.includes('pending')) assert.deepEqual([...states.keys()].sort(), ids.slice(1).sort())
    else {
      assert.match(String(states.get(confirmed!)?.confirmed_at), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
      assert.equal(states.get(ids[2]!)?.seen_at, null)
    }
    assert.match(String(states.get(seen!)?.seen_at), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    assert.equal(states.get(seen!)?.confirmed_at, null)
  }

  const { result, statements } = await watch(() =>
    call(app, anna.token, { method: 'GET', url: `/api/infoboard/posts/${confirmed}` }),
  )
  assert.equal(result.statusCode, 200, result.body)
  assert.equal(readsOfStates(statements).length, 1, statements.join('\n---\n'))
  assert.equal(readsOf(statements).length, 1, statements.join('\n---\n'))
  assert.equal(result.json().my_state.confirmed_at, result.json().my_state.seen_at)
})

// S15 (issue 44): a repeated confirmation answers 200 from the one read of the post with the reader's
// state; on Citus that read is one router statement on the tenant's worker, outside any transaction.
// The first confirmation writes in a transaction with its change records, pending: it never takes the
// tenant's sync clock, which other writes of the tenant would wait for until its commit (decision 0024, 7).
test('a repeated confirmation is one read; a first one records its changes without the sync clock', async () => {
  const tenant = await given.tenant(db)
  const channel = await given.folder(db, tenant, { type: 'infoboardChannel' })
  const anna = await given.user(db, tenant)
  const created = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/infoboard/posts',
    payload: { channel_id: channel, title: 'Fire drill', body: '<p>x</p>', requires_reading_confirmation: true },
  })
  assert.equal(created.statusCode, 201, created.body)
  const url = `/api/infoboard/posts/${created.json().id}/confirmation`
  await call(app, anna.token, { method: 'GET', url: `/api/infoboard/posts/${created.json().id}` }) // the token looked up

  const first = await watch(() => call(app, anna.token, { method: 'POST', url }))
  const repeat = await watch(() => call(app, anna.token, { method: 'POST', url }))

  assert.equal(first.result.statusCode, 201, first.result.body)
  const written = `sent:\n${first.statements.join('\n---\n')}`
  assert.deepEqual(
    first.statements.filter((text) => /\bsync_clocks\b/i.test(text)),
    [],
    `no statement of the write touches the clock:\n${written}`,
  )
  const recorded = first.statements.findIndex((text) => /^insert into "?sync_changes"?/i.test(text.trim()))
  const commit = first.statements.findIndex((text) => /^commit\b/i.test(text.trim()))
  assert.ok(recorded >= 0 && commit > recorded, `the change records commit with the write:\n${written}`)
  assert.equal(repeat.result.statusCode, 200, repeat.result.body)
  const sent = `sent:\n${repeat.statements.join('\n---\n')}`
  assert.equal(repeat.statements.length, 1, sent)
  assert.equal(transactions(repeat.statements).length, 0, sent)
  assert.equal(writes(repeat.statements).length, 0, sent)
})
