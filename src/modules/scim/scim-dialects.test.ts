import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import {
  assertScimError,
  ENTERPRISE,
  GROUP_SCHEMA,
  PATCH_OP,
  scim,
  scimToken,
  USER_SCHEMA,
} from '../../../test/helpers/scim-support.js'

/**
 * The request sequences Microsoft Entra ID and Okta document for their provisioning and deprovisioning
 * cycles, replayed as they send them (capitalized ops, "True"/"False", value objects without path,
 * the userName probe before a create, members removed by a value filter, PUT of the whole user).
 */

const db = testDb()
const q = (filter: string, extra = '') => `?filter=${encodeURIComponent(filter)}${extra}`

test('Microsoft Entra ID: user provisioning cycle (probe, create, update, disable, delete)', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const { token, id: tokenId } = await scimToken(app, tenant, 'Entra ID')
  const userName = 'Test_User_dfeef4c5-5681-4387-b016-bdf221e82081@contoso.com'

  // the connection test and the probe before a create
  const probe = await scim(app, token, 'GET', `/Users${q(`userName eq "${userName}"`)}`)
  assert.equal(probe.statusCode, 200)
  assert.deepEqual(probe.json(), {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
    totalResults: 0,
    startIndex: 1,
    itemsPerPage: 0,
    Resources: [],
  })
  const created = await scim(app, token, 'POST', '/Users', {
    schemas: [USER_SCHEMA, ENTERPRISE],
    externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
    userName,
    active: true,
    emails: [{ primary: true, type: 'work', value: 'Test_User_11bb6097-85a1-4e68-b534-eacc4e1ffb37@contoso.com' }],
    meta: { resourceType: 'User' },
    name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
    roles: [],
  })
  assert.equal(created.statusCode, 201, created.body)
  const id = created.json().id
  const found = (await scim(app, token, 'GET', `/Users${q(`userName eq "${userName}"`)}`)).json()
  assert.equal(found.totalResults, 1)
  assert.equal(found.Resources[0].id, id)
  assert.equal(
    (await scim(app, token, 'GET', `/Users${q('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')}`)).json()
      .totalResults,
    1,
  )

  // attribute updates as Entra sends them
  const patched = await scim(app, token, 'PATCH', `/Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [
      { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@contoso.com' },
      { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
      { op: 'Add', path: 'phoneNumbers[type eq "work"].value', value: '+1 425 555 0100' },
      { op: 'Add', path: `${ENTERPRISE}:employeeNumber`, value: '1200' },
      { op: 'Add', path: `${ENTERPRISE}:department`, value: 'Retail' },
      { op: 'Add', path: 'title', value: 'Cashier' },
      { op: 'Add', path: 'addresses[type eq "work"].locality', value: 'Berlin' },
      { op: 'Replace', path: 'preferredLanguage', value: 'de-DE' },
    ],
  })
  assert.equal(patched.statusCode, 200, patched.body)
  const user = patched.json()
  assert.equal(user.emails[0].value, 'updatedEmail@contoso.com')
  assert.equal(user.name.familyName, 'updatedFamilyName')
  assert.equal(user.phoneNumbers[0].value, '+1 425 555 0100')
  assert.deepEqual(user[ENTERPRISE], { employeeNumber: '1200' })
  assert.equal(user.preferredLanguage, 'de-DE')

  // a value object without path, booleans as strings
  const disabled = await scim(app, token, 'PATCH', `/Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'Replace', value: { active: 'False', 'name.givenName': 'Greta' } }],
  })
  assert.equal(disabled.statusCode, 200, disabled.body)
  assert.equal(disabled.json().active, false)
  assert.equal(disabled.json().name.givenName, 'Greta')
  const enabled = await scim(app, token, 'PATCH', `/Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'Replace', path: 'active', value: 'True' }],
  })
  assert.equal(enabled.json().active, true)

  // deprovisioning: disable, then delete
  await scim(app, token, 'PATCH', `/Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'Replace', path: 'active', value: false }],
  })
  assert.equal((await scim(app, token, 'DELETE', `/Users/${id}`)).statusCode, 204)
  assertScimError(await scim(app, token, 'GET', `/Users/${id}`), 404)
  assert.equal((await scim(app, token, 'GET', `/Users${q(`userName eq "${userName}"`)}`)).json().totalResults, 0)

  const audit = await db
    .selectFrom('audit_log')
    .select(['action', 'actor', 'actor_id'])
    .where('tenant_id', '=', tenant.id)
    .where('target_id', '=', id)
    .orderBy('id')
    .execute()
  assert.deepEqual(
    audit.map((a) => a.action),
    ['user.create', 'user.update', 'user.update', 'user.update', 'user.update', 'user.delete'],
  )
  assert.ok(audit.every((a) => a.actor === `scim:${tokenId}` && a.actor_id === null))
})

test('Microsoft Entra ID: group provisioning cycle (probe with excludedAttributes, members added and removed one by one)', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const { token } = await scimToken(app, tenant, 'Entra ID')
  const ids: string[] = []
  for (const n of [1, 2, 3]) {
    const res = await scim(app, token, 'POST', '/Users', {
      schemas: [USER_SCHEMA],
      userName: `member${n}@contoso.com`,
      name: { givenName: `Member`, familyName: `${n}` },
      active: true,
    })
    ids.push(res.json().id)
  }
  const displayName = 'Group1DisplayName'
  const probe = await scim(
    app,
    token,
    'GET',
    `/Groups${q(`displayName eq "${displayName}"`, '&excludedAttributes=members')}`,
  )
  assert.equal(probe.json().totalResults, 0)
  const created = await scim(app, token, 'POST', '/Groups', {
    schemas: [GROUP_SCHEMA],
    externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
    displayName,
    members: [],
    meta: { resourceType: 'Group' },
  })
  assert.equal(created.statusCode, 201, created.body)
  const group = created.json()
  assert.equal(created.headers.location, `http://api.test/scim/v2/Groups/${group.id}`)
  assert.deepEqual(group.members, [])
  const listed = (
    await scim(app, token, 'GET', `/Groups${q(`displayName eq "${displayName}"`, '&excludedAttributes=members')}`)
  ).json()
  assert.equal(listed.totalResults, 1)
  assert.equal(listed.Resources[0].members, undefined)

  const patch = (...Operations: unknown[]) =>
    scim(app, token, 'PATCH', `/Groups/${group.id}`, { schemas: [PATCH_OP], Operations })
  let res = await patch({ op: 'Add', path: 'members', value: [{ $ref: null, value: ids[0] }] })
  assert.equal(res.statusCode, 200, res.body)
  res = await patch({
    op: 'Add',
    path: 'members',
    value: [
      { $ref: null, value: ids[1] },
      { $ref: null, value: ids[2] },
    ],
  })
  assert.deepEqual(
    res.json().members.map((m: { value: string }) => m.value),
    ids,
  )
  assert.equal(res.json().members[0].display, 'Member 1')
  res = await patch({ op: 'Remove', path: `members[value eq "${ids[1]}"]` })
  assert.deepEqual(
    res.json().members.map((m: { value: string }) => m.value),
    [ids[0], ids[2]],
  )
  res = await patch({ op: 'Remove', path: 'members', value: [{ $ref: null, value: ids[0] }] })
  assert.deepEqual(
    res.json().members.map((m: { value: string }) => m.value),
    [ids[2]],
  )
  res = await patch({ op: 'Replace', path: 'displayName', value: `${displayName}Updated` })
  assert.equal(res.json().displayName, `${displayName}Updated`)
  const members = await db
    .selectFrom('department_users')
    .select('user_id')
    .where('tenant_id', '=', tenant.id)
    .where('department_id', '=', Number(group.id))
    .execute()
  assert.deepEqual(
    members.map((m) => String(m.user_id)),
    [ids[2]],
  )
  // the user shows the group; the filter on members finds the group
  const member = (await scim(app, token, 'GET', `/Users/${ids[2]}`)).json()
  assert.deepEqual(member.groups, [
    { value: group.id, display: `${displayName}Updated`, $ref: `http://api.test/scim/v2/Groups/${group.id}` },
  ])
  assert.equal((await scim(app, token, 'GET', `/Groups${q(`members[value eq "${ids[2]}"]`)}`)).json().totalResults, 1)
  assert.equal((await scim(app, token, 'GET', `/Users${q(`groups.value eq "${group.id}"`)}`)).json().totalResults, 1)
  // the department audit records of the API
  const audit = await call(app, tenant.adminToken, {
    method: 'GET',
    url: `/api/administration/audit-log?filter[target_type]=department&filter[target_id]=${group.id}&sort=id`,
  })
  assert.deepEqual(
    audit.json().map((a: { action: string }) => a.action),
    [
      'department.create',
      'department.update',
      'department.members_replace',
      'department.update',
      'department.members_replace',
      'department.update',
      'department.members_replace',
      'department.update',
      'department.members_replace',
      'department.update',
    ],
  )
  assert.equal((await scim(app, token, 'DELETE', `/Groups/${group.id}`)).statusCode, 204)
  assertScimError(await scim(app, token, 'GET', `/Groups/${group.id}`), 404)
})

test('Okta: user lifecycle (probe with startIndex/count, create, PUT of the whole user, active toggled by PATCH)', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const { token } = await scimToken(app, tenant, 'Okta')
  const userName = 'john.doe@example.com'
  const probe = await scim(app, token, 'GET', `/Users${q(`userName eq "${userName}"`, '&startIndex=1&count=100')}`)
  assert.equal(probe.json().totalResults, 0)
  const created = await scim(app, token, 'POST', '/Users', {
    schemas: [USER_SCHEMA],
    userName,
    name: { givenName: 'John', familyName: 'Doe' },
    emails: [{ primary: true, value: userName, type: 'work' }],
    displayName: 'John Doe',
    locale: 'en-US',
    externalId: '00ujl29u0le5T6Aj10h7',
    groups: [],
    password: 'okta-initial-password-1',
    active: true,
  })
  assert.equal(created.statusCode, 201, created.body)
  const user = created.json()
  const login = await call(app, undefined, {
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: tenant.slug, username: userName, password: 'okta-initial-password-1' },
  })
  assert.equal(login.statusCode, 200, 'the password Okta sent logs in')

  const got = (await scim(app, token, 'GET', `/Users/${user.id}`)).json()
  const put = await scim(app, token, 'PUT', `/Users/${user.id}`, {
    ...got,
    name: { givenName: 'Johnny', familyName: 'Doe' },
    emails: [{ primary: true, value: 'johnny.doe@example.com', type: 'work' }],
    groups: [],
  })
  assert.equal(put.statusCode, 200, put.body)
  assert.equal(put.json().name.givenName, 'Johnny')
  assert.equal(put.json().emails[0].value, 'johnny.doe@example.com')
  assert.equal(put.json().externalId, '00ujl29u0le5T6Aj10h7')

  const deactivated = await scim(app, token, 'PATCH', `/Users/${user.id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'replace', value: { active: false } }],
  })
  assert.equal(deactivated.json().active, false)
  assert.equal(
    (await call(app, login.json().access_token, { method: 'GET', url: '/api/users/current' })).statusCode,
    401,
  )
  const reactivated = await scim(app, token, 'PATCH', `/Users/${user.id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'replace', value: { active: true } }],
  })
  assert.equal(reactivated.json().active, true)
  // PUT with a different id in the body is refused
  assertScimError(await scim(app, token, 'PUT', `/Users/${user.id}`, { ...got, id: '1' }), 400, 'mutability')
})

test('Okta: group push (create, rename with the id in the value, add, remove by filter, replace the member list)', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const { token } = await scimToken(app, tenant, 'Okta')
  const ids: string[] = []
  for (const n of [1, 2]) {
    const res = await scim(app, token, 'POST', '/Users', {
      schemas: [USER_SCHEMA],
      userName: `okta.member${n}@example.com`,
      name: { givenName: 'Okta', familyName: `Member${n}` },
    })
    ids.push(res.json().id)
  }
  const created = await scim(app, token, 'POST', '/Groups', {
    schemas: [GROUP_SCHEMA],
    displayName: 'Store Berlin',
    members: [],
  })
  assert.equal(created.statusCode, 201, created.body)
  const id = created.json().id
  const patch = (...Operations: unknown[]) =>
    scim(app, token, 'PATCH', `/Groups/${id}`, { schemas: [PATCH_OP], Operations })
  let res = await patch({ op: 'replace', value: { id, displayName: 'Store Berlin Mitte' } })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.json().displayName, 'Store Berlin Mitte')
  res = await patch({ op: 'add', path: 'members', value: [{ value: ids[0], display: 'okta.member1@example.com' }] })
  assert.equal(res.json().members.length, 1)
  res = await patch({ op: 'replace', path: 'members', value: [{ value: ids[1] }] })
  assert.deepEqual(
    res.json().members.map((m: { value: string }) => m.value),
    [ids[1]],
  )
  res = await patch({ op: 'remove', path: `members[value eq "${ids[1]}"]` })
  assert.deepEqual(res.json().members, [])
  // PUT of the whole group
  res = await scim(app, token, 'PUT', `/Groups/${id}`, {
    schemas: [GROUP_SCHEMA],
    id,
    displayName: 'Store Berlin',
    members: ids.map((value) => ({ value })),
  })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.json().members.length, 2)
  assertScimError(await patch({ op: 'replace', value: { id: '123', displayName: 'x' } }), 400, 'mutability')
  assertScimError(await patch({ op: 'add', path: 'members', value: [{ value: 'not-a-user' }] }), 400, 'invalidValue')
  assertScimError(await patch({ op: 'add', path: 'members', value: [{ value: '999999999' }] }), 400, 'invalidValue')
  assertScimError(await patch({ op: 'remove', path: 'owners' }), 400, 'invalidPath')
  assertScimError(await scim(app, token, 'GET', `/Groups${q('displayName zz "x"')}`), 400, 'invalidFilter')
  assert.equal((await scim(app, token, 'DELETE', `/Groups/${id}`)).statusCode, 204)
})
