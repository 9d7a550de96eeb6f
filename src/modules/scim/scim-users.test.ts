import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { filterToSql } from './scim-filter.queries.js'
import { userAttributes } from './scim-users.queries.js'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { skipOnCitus } from '../../../test/helpers/citus.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import {
  assertScimError,
  ENTERPRISE,
  newUser,
  PATCH_OP,
  scim,
  scimToken,
  USER_SCHEMA,
} from '../../../test/helpers/scim-support.js'

const db = testDb()
const q = (filter: string) => `/Users?filter=${encodeURIComponent(filter)}`

async function setup() {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const { id: tokenId, token } = await scimToken(app, tenant)
  return { app, tenant, token, tokenId }
}

test('POST, GET, PUT, DELETE /Users map the attributes to users; meta and ETag; audit actor scim:<token id>; domain events', async () => {
  const { app, tenant, token, tokenId } = await setup()
  const created = await scim(app, token, 'POST', '/Users', {
    ...newUser('anna.berg@example.com'),
    externalId: 'entra-0001',
    phoneNumbers: [{ value: '+49 30 1234', type: 'work' }],
    preferredLanguage: 'de_DE',
    [ENTERPRISE]: { employeeNumber: 'E-42' },
    title: 'Cashier',
  })
  assert.equal(created.statusCode, 201, created.body)
  assert.match(String(created.headers['content-type']), /^application\/scim\+json/)
  const user = created.json()
  assert.equal(created.headers.location, `http://api.test/scim/v2/Users/${user.id}`)
  assert.equal(created.headers.etag, user.meta.version)
  assert.deepEqual(user.schemas, [USER_SCHEMA, ENTERPRISE])
  assert.equal(user.userName, 'anna.berg@example.com')
  assert.deepEqual(user.name, { givenName: 'Anna', familyName: 'Berg', formatted: 'Anna Berg' })
  assert.equal(user.displayName, 'Anna Berg')
  assert.deepEqual(user.emails, [{ value: 'anna.berg@example.com', type: 'work', primary: true }])
  assert.deepEqual(user.phoneNumbers, [{ value: '+49 30 1234', type: 'work', primary: true }])
  assert.equal(user.preferredLanguage, 'de-DE')
  assert.equal(user.externalId, 'entra-0001')
  assert.deepEqual(user[ENTERPRISE], { employeeNumber: 'E-42' })
  assert.equal(user.active, true)
  assert.deepEqual(user.groups, [])
  assert.equal(user.meta.resourceType, 'User')
  assert.match(user.meta.created, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
  assert.match(user.meta.version, /^W\/"\d+"$/)
  assert.equal(user.password, undefined)

  const row = await db.selectFrom('users').selectAll().where('id', '=', Number(user.id)).executeTakeFirstOrThrow()
  assert.equal(row.username, 'anna.berg@example.com')
  assert.equal(row.staff_number, 'E-42')
  assert.equal(row.lang_id, 'de-DE')
  assert.equal(row.role_id, tenant.employeeRoleId)
  assert.equal(row.password_hash, '!unusable')

  // the same events and audit records as an API change; the actor is the SCIM token
  const events = await db
    .selectFrom('domain_events')
    .select(['type', 'actor_id'])
    .where('tenant_id', '=', tenant.id)
    .where('subject_id', '=', user.id)
    .execute()
  assert.deepEqual(events, [{ type: 'user.created', actor_id: null }])
  const audit = await call(app, tenant.adminToken, {
    method: 'GET',
    url: `/api/administration/audit-log?filter[target_id]=${user.id}`,
  })
  assert.equal(audit.json()[0].action, 'user.create')
  assert.equal(audit.json()[0].actor, `scim:${tokenId}`)
  assert.equal(audit.json()[0].actor_id, null)

  const got = await scim(app, token, 'GET', `/Users/${user.id}`)
  assert.equal(got.statusCode, 200)
  assert.deepEqual(got.json(), user)
  assert.equal(got.headers.etag, user.meta.version)

  // PUT replaces: what is not sent is cleared (phone, language, staff number)
  const replaced = await scim(app, token, 'PUT', `/Users/${user.id}`, {
    ...newUser('anna.berg@example.com'),
    name: { givenName: 'Anna', familyName: 'Schmidt' },
    externalId: 'entra-0001',
  })
  assert.equal(replaced.statusCode, 200, replaced.body)
  assert.equal(replaced.json().name.familyName, 'Schmidt')
  assert.equal(replaced.json().phoneNumbers, undefined)
  assert.equal(replaced.json()[ENTERPRISE], undefined)
  assert.notEqual(replaced.json().meta.version, user.meta.version)
  // If-Match with the old version: 412; with the current one: accepted
  assertScimError(
    await scim(app, token, 'PUT', `/Users/${user.id}`, newUser('anna.berg@example.com'), {
      'if-match': user.meta.version,
    }),
    412,
  )
  const updated = await db
    .selectFrom('domain_events')
    .select(['type', 'data'])
    .where('tenant_id', '=', tenant.id)
    .where('subject_id', '=', user.id)
    .where('type', '=', 'user.updated')
    .executeTakeFirstOrThrow()
  assert.ok((updated.data.changed as string[]).includes('last_name'))

  // DELETE soft-deletes (restorable); afterwards 404; the userName stays taken (users module rule) → 409 uniqueness
  assert.equal((await scim(app, token, 'DELETE', `/Users/${user.id}`)).statusCode, 204)
  assertScimError(await scim(app, token, 'GET', `/Users/${user.id}`), 404)
  assertScimError(await scim(app, token, 'DELETE', `/Users/${user.id}`), 404)
  assertScimError(await scim(app, token, 'POST', '/Users', newUser('Anna.Berg@example.com')), 409, 'uniqueness')
  const restored = await call(app, tenant.adminToken, {
    method: 'POST',
    url: `/api/users/restore/${user.id}`,
    payload: {},
  })
  assert.equal(restored.statusCode, 200, restored.body)
  assert.equal((await scim(app, token, 'GET', `/Users/${user.id}`)).statusCode, 200)
})

test('conflicts and bad values: 409 uniqueness, 400 invalidValue, malformed JSON 400 invalidSyntax', async () => {
  const { app, tenant, token } = await setup()
  await given.user(db, tenant, { username: 'taken.name' })
  assertScimError(await scim(app, token, 'POST', '/Users', newUser('TAKEN.name')), 409, 'uniqueness')
  const other = (await scim(app, token, 'POST', '/Users', newUser('free.name'))).json()
  assertScimError(
    await scim(app, token, 'PATCH', `/Users/${other.id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'userName', value: 'taken.name' }],
    }),
    409,
    'uniqueness',
  )
  assertScimError(await scim(app, token, 'POST', '/Users', newUser('has space')), 400, 'invalidValue')
  assertScimError(await scim(app, token, 'POST', '/Users', { schemas: [USER_SCHEMA] }), 400, 'invalidValue')
  assertScimError(
    await scim(app, token, 'POST', '/Users', newUser('bad.mail', { emails: [{ value: 'not-an-address' }] })),
    400,
    'invalidValue',
  )
  const malformed = await call(app, token, {
    method: 'POST',
    url: '/scim/v2/Users',
    payload: '{"userName": ',
    headers: { 'content-type': 'application/scim+json' },
  })
  assertScimError(malformed, 400, 'invalidSyntax')
  assertScimError(await scim(app, token, 'GET', '/Users/abc'), 404)
  assertScimError(await scim(app, token, 'GET', '/Users/999999999'), 404)
})

test('filters: every operator, and/or/not, grouping, attribute paths, value filters; 400 invalidFilter', async () => {
  const { app, tenant, token } = await setup()
  const make = async (userName: string, extra: Record<string, unknown>) => {
    const res = await scim(app, token, 'POST', '/Users', newUser(userName, extra))
    assert.equal(res.statusCode, 201, res.body)
    return res.json()
  }
  const anna = await make('anna', { name: { givenName: 'Anna', familyName: 'Berg' }, externalId: 'X-1' })
  const ben = await make('ben', { name: { givenName: 'Ben', familyName: 'Otto' }, active: false, emails: [] })
  const chloe = await make('chloe', {
    name: { givenName: 'Chloe', familyName: 'Berger' },
    [ENTERPRISE]: { employeeNumber: '7' },
    phoneNumbers: [{ value: '555-1', type: 'work' }],
  })
  await given.user(db, tenant, { username: 'zed', deleted_at: new Date() })
  const ids = async (filter: string) => {
    const res = await scim(app, token, 'GET', q(filter))
    assert.equal(res.statusCode, 200, `${filter}: ${res.body}`)
    return res
      .json()
      .Resources.map((r: { userName: string }) => r.userName)
      .filter((n: string) => n !== 'admin')
      .sort()
  }
  assert.deepEqual(await ids('userName eq "ANNA"'), ['anna'])
  assert.deepEqual(await ids('userName ne "anna"'), ['ben', 'chloe'])
  assert.deepEqual(await ids('userName co "NN"'), ['anna'])
  assert.deepEqual(await ids('userName sw "c"'), ['chloe'])
  assert.deepEqual(await ids('userName ew "en"'), ['ben'])
  assert.deepEqual(await ids('userName gt "b"'), ['ben', 'chloe'])
  assert.deepEqual(await ids('userName ge "ben"'), ['ben', 'chloe'])
  assert.deepEqual(await ids('userName lt "b"'), ['anna'])
  assert.deepEqual(await ids('userName le "ben"'), ['anna', 'ben'])
  assert.deepEqual(await ids('externalId pr'), ['anna'])
  assert.deepEqual(await ids('externalId eq "x-1"'), [], 'externalId is case-exact')
  assert.deepEqual(await ids('externalId eq "X-1"'), ['anna'])
  assert.deepEqual(await ids('active eq false'), ['ben'])
  assert.deepEqual(await ids('name.familyName sw "berg" and not (name.givenName eq "chloe")'), ['anna'])
  assert.deepEqual(await ids('(userName eq "anna" or userName eq "ben") and active eq true'), ['anna'])
  assert.deepEqual(await ids('emails[type eq "work" and value co "@example.com"]'), ['anna', 'chloe'])
  assert.deepEqual(await ids('emails.value ew "example.com"'), ['anna', 'chloe'])
  assert.deepEqual(await ids('not (emails pr)'), ['ben'])
  assert.deepEqual(await ids('phoneNumbers[type eq "work"]'), ['chloe'])
  assert.deepEqual(await ids(`${ENTERPRISE}:employeeNumber eq "7"`), ['chloe'])
  assert.deepEqual(await ids(`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "anna"`), ['anna'])
  assert.deepEqual(await ids(`id eq "${ben.id}"`), ['ben'])
  assert.deepEqual(await ids('id eq "no-such-id"'), [])
  assert.deepEqual(
    await ids(`meta.created ge "${anna.meta.created}" and meta.lastModified le "2999-01-01T00:00:00Z"`),
    ['anna', 'ben', 'chloe'],
  )
  assert.deepEqual(await ids('displayName eq "chloe berger"'), ['chloe'])
  assert.deepEqual(await ids('userName eq "zed"'), [], 'deleted users are not listed')
  void chloe
  for (const bad of [
    'userName eq',
    'userName xx "a"',
    'nickName2 eq "a"',
    'active gt true',
    'meta.created gt "yesterday"',
    'userName eq true',
    'emails[foo eq "x"]',
    'userName[value eq "x"]',
  ]) {
    assertScimError(await scim(app, token, 'GET', q(bad)), 400, 'invalidFilter')
  }
})

test('pagination (startIndex, count, totalResults), sortBy, attributes and excludedAttributes', async () => {
  const { app, token } = await setup()
  for (const n of [1, 2, 3, 4, 5]) await scim(app, token, 'POST', '/Users', newUser(`page.user${n}`))
  const filter = encodeURIComponent('userName sw "page."')
  const first = (await scim(app, token, 'GET', `/Users?filter=${filter}&startIndex=1&count=2`)).json()
  assert.equal(first.totalResults, 5)
  assert.equal(first.itemsPerPage, 2)
  assert.equal(first.startIndex, 1)
  assert.deepEqual(first.schemas, ['urn:ietf:params:scim:api:messages:2.0:ListResponse'])
  const third = (await scim(app, token, 'GET', `/Users?filter=${filter}&startIndex=5&count=2`)).json()
  assert.deepEqual(
    third.Resources.map((r: { userName: string }) => r.userName),
    ['page.user5'],
  )
  const none = (await scim(app, token, 'GET', `/Users?filter=${filter}&count=0`)).json()
  assert.equal(none.totalResults, 5)
  assert.deepEqual(none.Resources, [])
  const below = (await scim(app, token, 'GET', `/Users?filter=${filter}&startIndex=0&count=1`)).json()
  assert.equal(below.startIndex, 1)
  const sorted = (
    await scim(app, token, 'GET', `/Users?filter=${filter}&sortBy=userName&sortOrder=descending&count=1`)
  ).json()
  assert.equal(sorted.Resources[0].userName, 'page.user5')
  assertScimError(await scim(app, token, 'GET', '/Users?sortBy=password'), 400, 'invalidValue')

  const slim = (
    await scim(app, token, 'GET', `/Users?filter=${filter}&attributes=userName,name.givenName&count=1`)
  ).json()
  assert.deepEqual(Object.keys(slim.Resources[0]).sort(), ['id', 'name', 'schemas', 'userName'])
  assert.deepEqual(slim.Resources[0].name, { givenName: 'Anna' })
  const without = (
    await scim(app, token, 'GET', `/Users?filter=${filter}&excludedAttributes=emails,meta,groups,id&count=1`)
  ).json()
  assert.equal(without.Resources[0].emails, undefined)
  assert.equal(without.Resources[0].meta, undefined)
  assert.ok(without.Resources[0].id, 'id is always returned')
  const one = (await scim(app, token, 'GET', `/Users/${first.Resources[0].id}?attributes=emails.value`)).json()
  assert.deepEqual(one.emails, [{ value: 'page.user1@example.com' }])
  assertScimError(await scim(app, token, 'GET', '/Users?limit=5'), 400, 'invalidValue')
})

test('PATCH forms: add/replace/remove with and without path, value filters in paths; invalidPath, noTarget, mutability', async () => {
  const { app, tenant, token } = await setup()
  const user = (await scim(app, token, 'POST', '/Users', newUser('patch.me'))).json()
  const patch = (...Operations: unknown[]) =>
    scim(app, token, 'PATCH', `/Users/${user.id}`, { schemas: [PATCH_OP], Operations })

  let res = await patch({ op: 'replace', path: 'name.familyName', value: 'Neu' })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.json().name.familyName, 'Neu')
  res = await patch({ op: 'add', path: 'phoneNumbers', value: [{ value: '+1 555', type: 'mobile' }] })
  assert.deepEqual(res.json().phoneNumbers, [{ value: '+1 555', type: 'work', primary: true }])
  res = await patch({ op: 'replace', path: 'emails[type eq "work"].value', value: 'new@example.com' })
  assert.equal(res.json().emails[0].value, 'new@example.com')
  res = await patch({ op: 'remove', path: 'phoneNumbers[type eq "work"]' })
  assert.equal(res.json().phoneNumbers, undefined)
  res = await patch({
    op: 'replace',
    value: { displayName: 'ignored', externalId: 'ext-9', 'name.givenName': 'Greta' },
  })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.json().externalId, 'ext-9')
  assert.equal(res.json().name.givenName, 'Greta')
  res = await patch({ op: 'add', path: `${ENTERPRISE}:employeeNumber`, value: '0815' })
  assert.deepEqual(res.json()[ENTERPRISE], { employeeNumber: '0815' })
  res = await patch(
    { op: 'remove', path: 'externalId' },
    { op: 'replace', path: 'title', value: 'accepted and not stored' },
  )
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.json().externalId, undefined)
  res = await patch({ op: 'replace', path: 'active', value: false })
  assert.equal(res.json().active, false)
  res = await patch({ op: 'replace', path: 'password', value: 'a-new-password-1' })
  assert.equal(res.statusCode, 200)
  const login = await call(app, undefined, {
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: 'patch.me', password: 'a-new-password-1' },
  })
  assert.equal(login.statusCode, 401, 'inactive: the new password does not log in yet')

  assertScimError(await patch({ op: 'replace', path: 'nickName2', value: 'x' }), 400, 'invalidPath')
  assertScimError(await patch({ op: 'replace', path: 'name.nothing', value: 'x' }), 400, 'invalidPath')
  assertScimError(await patch({ op: 'replace', path: 'emails[type eq "work"', value: 'x' }), 400, 'invalidPath')
  assertScimError(await patch({ op: 'remove' }), 400, 'noTarget')
  assertScimError(await patch({ op: 'replace', path: 'name.givenName', value: 5 }), 400, 'invalidValue')
  assertScimError(await patch({ op: 'remove', path: 'userName' }), 400, 'invalidValue')
  assertScimError(await patch({ op: 'replace', path: 'emails', value: 'x@example.com' }), 400, 'invalidValue')
  assertScimError(await patch({ op: 'replace', path: 'id', value: '5' }), 400, 'mutability')
  assertScimError(await patch({ op: 'move', path: 'userName' }), 400, 'invalidSyntax')
  assertScimError(
    await scim(app, token, 'PATCH', `/Users/${user.id}`, { schemas: ['urn:wrong'], Operations: [] }),
    400,
    'invalidSyntax',
  )
  const unchanged = (await scim(app, token, 'GET', `/Users/${user.id}`)).json()
  assert.equal(unchanged.userName, 'patch.me')
})

test('active false deactivates the user and revokes their tokens; active true does not bring them back', async () => {
  const { app, tenant, token } = await setup()
  const employee = await given.user(db, tenant)
  assert.equal((await call(app, employee.token, { method: 'GET', url: '/api/users/current' })).statusCode, 200)
  const res = await scim(app, token, 'PATCH', `/Users/${employee.id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
  })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.json().active, false)
  assert.equal((await call(app, employee.token, { method: 'GET', url: '/api/users/current' })).statusCode, 401)
  await scim(app, token, 'PATCH', `/Users/${employee.id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'Replace', path: 'active', value: 'True' }],
  })
  assert.equal((await call(app, employee.token, { method: 'GET', url: '/api/users/current' })).statusCode, 401)
  const tokens = await db
    .selectFrom('access_tokens')
    .select('revoked_at')
    .where('tenant_id', '=', tenant.id)
    .where('user_id', '=', employee.id)
    .execute()
  assert.ok(tokens.every((t) => t.revoked_at !== null))
})

test(
  'a filter is one SQL condition on indexes: userName eq uses the username index, externalId its own',
  {
    skip: skipOnCitus(
      "it reads a single node's EXPLAIN; on Citus the plan is the shard's, with the shard's statistics (a sequential scan of a small shard)",
    ),
  },
  async () => {
    const tenant = await given.tenant(db)
    await sql`insert into users (tenant_id, username, password_hash, first_name, last_name, role_id, external_id)
    select ${tenant.id}, 'plan.user' || g, '!unusable', 'Plan', 'User' || g, ${tenant.employeeRoleId}, 'ext-' || g
    from generate_series(1, 5000) g`.execute(db)
    await sql`analyze users`.execute(db)
    // `indexable`: the seq scan is ruled out, to show that the condition can use an index at all (on this
    // small test table the planner prefers a scan for a substring search; at 100,000 users it does not)
    const plan = async (filter: string, indexable = false) =>
      db.transaction().execute(async (trx) => {
        if (indexable) await sql`set local enable_seqscan = off`.execute(trx)
        const query = trx
          .selectFrom('users as u')
          .select('u.id')
          .where('u.tenant_id', '=', tenant.id)
          .where('u.deleted_at', 'is', null)
          .where('u.blacked_out_at', 'is', null)
          .where(filterToSql(filter, { attributes: userAttributes(tenant.id), coreSchema: USER_SCHEMA }))
          .compile()
        const literal = (i: string) => `'${String(query.parameters[Number(i) - 1]).replace(/'/g, "''")}'`
        const { rows } = await sql
          .raw<{ 'QUERY PLAN': string }>(`explain ${query.sql.replace(/\$(\d+)/g, (_, i: string) => literal(i))}`)
          .execute(trx)
        return rows.map((r) => r['QUERY PLAN']).join('\n')
      })
    assert.match(await plan('userName eq "Plan.User77"'), /users_username_uniq/)
    assert.match(await plan('externalId eq "ext-77"'), /users_external_id_idx/)
    // a substring search reads the tenant's rows through an index (the trigram index or the tenant's): never other tenants'
    assert.match(await plan('userName co "user77"', true), /Index Cond: .*tenant_id|users_username_lower_trgm/)
    assert.doesNotMatch(await plan('userName eq "plan.user77" or externalId eq "ext-78"'), /Seq Scan/)
  },
)
