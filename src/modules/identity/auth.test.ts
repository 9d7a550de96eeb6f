import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given, TEST_PASSWORD } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()
const login = async (body: Record<string, unknown>) =>
  (await buildTestApp()).inject({ method: 'POST', url: '/api/auth/login', payload: body })

test('login returns a bearer token, its expiry and the basic user', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant, { username: 'Anna.Schmidt' })

  const res = await login({
    tenant: tenant.slug,
    username: 'anna.schmidt',
    password: TEST_PASSWORD,
    device_name: 'phone',
  })

  assert.equal(res.statusCode, 200)
  const body = res.json()
  assert.match(body.access_token, /^wp_[1-9][0-9]*_[A-Za-z0-9_-]{43}$/)
  assert.equal(body.token_type, 'Bearer')
  assert.match(body.expires_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
  assert.equal(body.password_change_required, false)
  assert.equal(body.user.id, user.id)
  assert.equal(body.user.full_name, 'Test User')
  assert.equal(body.user.password_hash, undefined)
  assert.equal(body.user.email, undefined, 'login answers with basic fields only')
  const me = await call(await buildTestApp(), body.access_token, { method: 'GET', url: '/api/users/current' })
  assert.equal(me.json().id, user.id)
})

test('every login failure answers 401 with the same body', async () => {
  const tenant = await given.tenant(db)
  await given.user(db, tenant, { username: 'inactive', active: false })
  await given.user(db, tenant, { username: 'deleted', deleted_at: sql`now()` })
  await given.user(db, tenant, { username: 'valid' })

  const attempts = [
    { tenant: 'no-such-tenant', username: 'valid', password: TEST_PASSWORD },
    { tenant: tenant.slug, username: 'nobody', password: TEST_PASSWORD },
    { tenant: tenant.slug, username: 'valid', password: 'wrong-password' },
    { tenant: tenant.slug, username: 'inactive', password: TEST_PASSWORD },
    { tenant: tenant.slug, username: 'deleted', password: TEST_PASSWORD },
  ]
  const bodies = []
  for (const attempt of attempts) {
    const res = await login(attempt)
    assert.equal(res.statusCode, 401, JSON.stringify(attempt))
    assert.equal(res.headers['content-type'], 'application/problem+json')
    bodies.push(res.body)
  }
  assert.equal(new Set(bodies).size, 1, 'no failure reveals which part was wrong')
})

test('the 11th failed login within the window answers 429 with Retry-After', async () => {
  const tenant = await given.tenant(db)
  await given.user(db, tenant, { username: 'target' })
  for (let i = 0; i < 10; i++)
    assert.equal((await login({ tenant: tenant.slug, username: 'target', password: 'nope' })).statusCode, 401)

  const throttled = await login({ tenant: tenant.slug, username: 'TARGET', password: TEST_PASSWORD })

  assert.equal(throttled.statusCode, 429)
  assert.equal(throttled.json().code, 'too_many_attempts')
  const retryAfter = Number(throttled.headers['retry-after'])
  assert.ok(retryAfter > 0 && retryAfter <= 900, `Retry-After ${retryAfter}`)
  const otherUser = await login({ tenant: tenant.slug, username: 'someone-else', password: 'nope' })
  assert.equal(otherUser.statusCode, 401, 'throttling is per tenant+username')
})

test('login is throttled no more once the failures are older than the window', async () => {
  const tenant = await given.tenant(db)
  await given.user(db, tenant, { username: 'patient' })
  for (let i = 0; i < 10; i++) await login({ tenant: tenant.slug, username: 'patient', password: 'nope' })
  await db
    .updateTable('login_failures')
    .set({ attempted_at: sql`now() - interval '16 minutes'` as never })
    .where('tenant_slug', '=', tenant.slug)
    .execute()

  const res = await login({ tenant: tenant.slug, username: 'patient', password: TEST_PASSWORD })

  assert.equal(res.statusCode, 200)
})

test('an expired token is rejected with 401', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant)
  await given.expireToken(db, user.token)

  const res = await call(await buildTestApp(), user.token, { method: 'GET', url: '/api/users/current' })

  assert.equal(res.statusCode, 401)
})

test('logout revokes the token used, and only that one', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  await given.user(db, tenant, { username: 'two-devices' })
  const first = (await login({ tenant: tenant.slug, username: 'two-devices', password: TEST_PASSWORD })).json()
    .access_token
  const second = (await login({ tenant: tenant.slug, username: 'two-devices', password: TEST_PASSWORD })).json()
    .access_token

  const res = await call(app, first, { method: 'POST', url: '/api/auth/logout' })

  assert.equal(res.statusCode, 204)
  assert.equal((await call(app, first, { method: 'GET', url: '/api/users/current' })).statusCode, 401)
  assert.equal((await call(app, second, { method: 'GET', url: '/api/users/current' })).statusCode, 200)
})

test('a logout mark rejects tokens issued before it but not a new login', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant, { username: 'marked' })
  // read first: Citus refuses a volatile function in an UPDATE of a distributed table
  const { rows } = await sql<{ now: string }>`select clock_timestamp()::text as now`.execute(db)
  await db
    .updateTable('users')
    .set({ logout_requested_at: sql`${rows[0]!.now}::timestamptz` as never })
    .where('tenant_id', '=', tenant.id)
    .where('id', '=', user.id)
    .execute()

  const old = await call(app, user.token, { method: 'GET', url: '/api/users/current' })
  const fresh = (await login({ tenant: tenant.slug, username: 'marked', password: TEST_PASSWORD })).json().access_token
  const renewed = await call(app, fresh, { method: 'GET', url: '/api/users/current' })

  assert.equal(old.statusCode, 401)
  assert.equal(renewed.statusCode, 200)
})

test('tokens of deactivated, deleted and blacked-out users are rejected', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const changes = [
    { active: false },
    { deleted_at: sql`now()` },
    { blacked_out_at: sql`now()`, deleted_at: sql`now()` },
  ]
  for (const change of changes) {
    const user = await given.user(db, tenant)
    assert.equal((await call(app, user.token, { method: 'GET', url: '/api/users/current' })).statusCode, 200)
    await db
      .updateTable('users')
      .set(change as never)
      .where('id', '=', user.id)
      .execute()
    assert.equal(
      (await call(app, user.token, { method: 'GET', url: '/api/users/current' })).statusCode,
      401,
      JSON.stringify(Object.keys(change)),
    )
  }
})

test('missing, malformed and unknown bearer tokens answer the same 401', async () => {
  const app = await buildTestApp()
  const variants = [undefined, 'Basic abc', 'Bearer', 'Bearer wp_unknownunknownunknownunknown', 'Bearer not-a-token']
  const bodies = new Set<string>()
  for (const authorization of variants) {
    const res = await app.inject({
      method: 'GET',
      url: '/api/users/current',
      headers: authorization ? { authorization } : {},
    })
    assert.equal(res.statusCode, 401)
    bodies.add(res.body)
  }
  assert.equal(bodies.size, 1)
})

test('a single-session tenant revokes older tokens at login, except for protected users', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  await db
    .updateTable('tenants')
    .set({ settings: JSON.stringify({ single_session: true }) })
    .where('id', '=', tenant.id)
    .execute()
  const plain = await given.user(db, tenant, { username: 'plain' })
  const protectedUser = await given.user(db, tenant, { username: 'protected', prevent_logout: true })

  await login({ tenant: tenant.slug, username: 'plain', password: TEST_PASSWORD })
  await login({ tenant: tenant.slug, username: 'protected', password: TEST_PASSWORD })

  assert.equal((await call(app, plain.token, { method: 'GET', url: '/api/users/current' })).statusCode, 401)
  assert.equal((await call(app, protectedUser.token, { method: 'GET', url: '/api/users/current' })).statusCode, 200)
})

test('a token names its tenant: another tenant id in it makes it unknown; tokens of the older format still work', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const other = await given.tenant(db)
  const user = await given.user(db, tenant)
  assert.ok(user.token.startsWith(`wp_${tenant.id}_`))
  const moved = user.token.replace(`wp_${tenant.id}_`, `wp_${other.id}_`)
  assert.equal((await call(app, moved, { method: 'GET', url: '/api/users/current' })).statusCode, 401)

  const { hashAccessToken } = await import('../../platform/auth/tokens.js')
  const legacy = `wp_${'L'.repeat(20)}${Date.now().toString(36).padStart(23, '0')}`
  await db
    .insertInto('access_tokens')
    .values({
      tenant_id: tenant.id,
      user_id: user.id,
      token_hash: hashAccessToken(legacy),
      expires_at: sql`now() + interval '1 day'` as never,
    })
    .execute()
  const me = await call(app, legacy, { method: 'GET', url: '/api/users/current' })
  assert.equal(me.statusCode, 200)
  assert.equal(me.json().id, user.id)
})
