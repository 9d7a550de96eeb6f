import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { parse } from 'csv-parse/sync'
import { sql } from 'kysely'
import { diff, REDACTED } from './audit-log.js'
import { purgeAuditLog, recordAudit } from './audit-log.queries.js'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given, type GivenTenant } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()
const app = buildTestApp()

async function auditLog(tenant: GivenTenant, query = '') {
  const res = await call(await app, tenant.adminToken, { method: 'GET', url: `/api/administration/audit-log${query}` })
  assert.equal(res.statusCode, 200, res.body)
  return res.json() as Array<Record<string, any>>
}

interface Case {
  name: string
  /** Performs the change; returns the expected target id. */
  act: (t: GivenTenant, ids: Record<string, any>) => Promise<LightMyRequestResponse>
  action: string
  targetType: string
  target: (res: any, ids: Record<string, any>) => number | string
  check?: (record: Record<string, any>) => void
}

const req = async (t: GivenTenant, method: string, url: string, payload?: object) =>
  call(await app, t.adminToken, { method: method as never, url, payload, headers: { 'user-agent': 'audit-test/1.0' } })

/** The record's `changes` hold exactly these fields, each as [before, after]. */
const changesAre = (expected: Record<string, [unknown, unknown]>) => (rec: Record<string, any>) =>
  assert.deepEqual(rec.changes, expected)
const isTimestamp = (value: unknown) => assert.match(String(value), /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d/)

const CASES: Case[] = [
  {
    name: 'role create',
    action: 'role.create',
    targetType: 'role',
    act: (t) => req(t, 'POST', '/api/roles', { name: 'Leads', permissions: ['users.view'] }),
    target: (r) => r.id,
    check: (rec) => assert.deepEqual(rec.changes.name, [null, 'Leads']),
  },
  {
    name: 'role update',
    action: 'role.update',
    targetType: 'role',
    act: (t, ids) => req(t, 'PUT', `/api/roles/${ids.role}`, { name: 'Renamed', permissions: ['users.view'] }),
    target: (_r, ids) => ids.role!,
    check: changesAre({ name: ['Old role', 'Renamed'], permissions: [[], ['users.view']] }),
  },
  {
    name: 'role delete',
    action: 'role.delete',
    targetType: 'role',
    act: (t, ids) => req(t, 'DELETE', `/api/roles/${ids.role}`),
    target: (_r, ids) => ids.role!,
  },
  {
    name: 'department create',
    action: 'department.create',
    targetType: 'department',
    act: (t) => req(t, 'POST', '/api/departments', { name: 'Kitchen' }),
    target: (r) => r.id,
  },
  {
    name: 'department update',
    action: 'department.update',
    targetType: 'department',
    act: (t, ids) => req(t, 'PUT', `/api/departments/${ids.department}`, { name: 'Bakery' }),
    target: (_r, ids) => ids.department!,
    check: changesAre({ name: ['Old department', 'Bakery'] }),
  },
  {
    name: 'department members',
    action: 'department.members_replace',
    targetType: 'department',
    act: (t, ids) => req(t, 'PUT', `/api/departments/${ids.department}`, { user_ids: [ids.user!] }),
    target: (_r, ids) => ids.department!,
    check: (rec) => assert.deepEqual(rec.changes, { user_ids: [[rec.__ids.member], [rec.__ids.user]] }),
  },
  {
    name: 'department delete',
    action: 'department.delete',
    targetType: 'department',
    act: (t, ids) => req(t, 'DELETE', `/api/departments/${ids.department}`),
    target: (_r, ids) => ids.department!,
  },
  {
    name: 'user create',
    action: 'user.create',
    targetType: 'user',
    act: (t) =>
      req(t, 'POST', '/api/users', {
        username: 'new.one',
        password: 'long-enough-1',
        first_name: 'N',
        last_name: 'O',
        role_id: t.employeeRoleId,
      }),
    target: (r) => r.id,
    check: (rec) => {
      assert.deepEqual(
        [rec.changes.username, rec.changes.first_name, rec.changes.role_id],
        [
          [null, 'new.one'],
          [null, 'N'],
          [null, rec.__ids.employeeRole],
        ],
      )
      assert.ok(!('password_hash' in rec.changes) && !JSON.stringify(rec).includes('long-enough-1'))
    },
  },
  {
    name: 'user update (profile and administrative fields)',
    action: 'user.update',
    targetType: 'user',
    act: (t, ids) =>
      req(t, 'PUT', `/api/users/${ids.user}`, {
        first_name: 'Anna',
        phone: '+49 30 1234',
        role_id: ids.role,
        wants_email_notifications: true,
      }),
    target: (_r, ids) => ids.user!,
    check: (rec) =>
      assert.deepEqual(rec.changes, {
        first_name: ['Test', 'Anna'],
        phone: [null, '+49 30 1234'],
        role_id: [rec.__ids.employeeRole, rec.__ids.role],
        wants_email_notifications: [false, true],
      }),
  },
  {
    name: 'user password change',
    action: 'user.password_change',
    targetType: 'user',
    act: (t, ids) => req(t, 'PUT', `/api/users/${ids.user}`, { password: 'another-long-1' }),
    target: (_r, ids) => ids.user!,
    check: (rec) => assert.ok(!JSON.stringify(rec).includes('another-long-1')),
  },
  {
    name: 'user update with a password (hash never recorded)',
    action: 'user.update',
    targetType: 'user',
    act: (t, ids) => req(t, 'PUT', `/api/users/${ids.user}`, { password: 'another-long-2', last_name: 'Berg' }),
    target: (_r, ids) => ids.user!,
    check: (rec) => {
      assert.deepEqual(rec.changes, { last_name: ['User', 'Berg'] })
      assert.ok(!/another-long-2|argon|\$2[aby]\$/.test(JSON.stringify(rec)))
    },
  },
  {
    name: 'user logout',
    action: 'user.logout',
    targetType: 'user',
    act: (t, ids) => req(t, 'POST', `/api/users/logout/${ids.user}`),
    target: (_r, ids) => ids.user!,
  },
  {
    name: 'user delete',
    action: 'user.delete',
    targetType: 'user',
    act: (t, ids) => req(t, 'DELETE', `/api/users/${ids.user}`),
    target: (_r, ids) => ids.user!,
    check: (rec) => {
      assert.deepEqual(Object.keys(rec.changes), ['deleted_at'])
      assert.equal(rec.changes.deleted_at[0], null)
      isTimestamp(rec.changes.deleted_at[1])
    },
  },
  {
    name: 'user restore',
    action: 'user.restore',
    targetType: 'user',
    act: (t, ids) => req(t, 'POST', `/api/users/restore/${ids.deletedUser}`, { role_id: ids.role }),
    target: (_r, ids) => ids.deletedUser!,
    check: (rec) =>
      assert.deepEqual(rec.changes, {
        deleted_at: ['2026-01-02 03:04:05', null],
        role_id: [rec.__ids.employeeRole, rec.__ids.role],
      }),
  },
  {
    name: 'user blackout',
    action: 'user.blackout',
    targetType: 'user',
    act: (t, ids) => req(t, 'DELETE', `/api/users/blackout/${ids.user}`),
    target: (_r, ids) => ids.user!,
  },
  {
    name: 'grant create',
    action: 'entity_permission.create',
    targetType: 'entity_permission',
    act: (t, ids) =>
      req(t, 'POST', '/api/entity-permissions', {
        key: 'write',
        permission_entity: 'user',
        permission_entity_id: ids.user,
        target_entity: 'folder',
        target_entity_id: ids.folder,
      }),
    target: (r) => r.id,
    check: (rec) =>
      assert.deepEqual(
        [rec.changes.key, rec.changes.permission_entity_id, rec.changes.target_entity_id],
        [
          [null, 'write'],
          [null, rec.__ids.user],
          [null, rec.__ids.folder],
        ],
      ),
  },
  {
    name: 'grant delete',
    action: 'entity_permission.delete',
    targetType: 'entity_permission',
    act: (t, ids) => req(t, 'DELETE', `/api/entity-permissions/${ids.grant}`),
    target: (_r, ids) => ids.grant!,
    check: (rec) =>
      assert.deepEqual(
        [rec.changes.key, rec.changes.permission_entity, rec.changes.target_entity],
        [
          ['view', null],
          ['user', null],
          ['folder', null],
        ],
      ),
  },
  {
    name: 'folder create',
    action: 'folder.create',
    targetType: 'folder',
    act: (t) => req(t, 'POST', '/api/folders', { type: 'role', name: 'Leitung' }),
    target: (r) => r.id,
    check: (rec) =>
      assert.deepEqual(
        [rec.changes.name, rec.changes.type],
        [
          [null, 'Leitung'],
          [null, 'role'],
        ],
      ),
  },
  {
    name: 'folder update',
    action: 'folder.update',
    targetType: 'folder',
    act: (t, ids) => req(t, 'PUT', `/api/folders/${ids.folder}`, { name: 'Renamed folder', show_on_menu: true }),
    target: (_r, ids) => ids.folder!,
    check: changesAre({ name: ['F', 'Renamed folder'], show_on_menu: [false, true] }),
  },
  {
    name: 'folder move',
    action: 'folder.update',
    targetType: 'folder',
    act: (t, ids) => req(t, 'PUT', `/api/folders/${ids.otherFolder}`, { parent_id: ids.folder }),
    target: (_r, ids) => ids.otherFolder!,
    check: (rec) => assert.deepEqual(rec.changes, { parent_id: [null, rec.__ids.folder] }),
  },
  {
    name: 'folder delete',
    action: 'folder.delete',
    targetType: 'folder',
    act: (t, ids) => req(t, 'DELETE', `/api/folders/${ids.folder}`),
    target: (_r, ids) => ids.folder!,
  },
  {
    name: 'shared item create',
    action: 'shared_item.create',
    targetType: 'shared_item',
    act: (t, ids) =>
      req(t, 'POST', '/api/administration/shared-items', {
        type: 'calendarEvent',
        targetable_type: 'calendarEvent',
        targetable_id: ids.calendarEvent,
      }),
    target: (r) => r.id,
    check: (rec) =>
      assert.deepEqual(
        [rec.changes.type, rec.changes.redirect_type, rec.changes.targetable_id],
        [
          [null, 'calendarEvent'],
          [null, 'redirect'],
          [null, String(rec.__ids.calendarEvent)],
        ],
      ),
  },
  {
    name: 'shared item update',
    action: 'shared_item.update',
    targetType: 'shared_item',
    act: (t, ids) => req(t, 'PUT', `/api/administration/shared-items/${ids.sharedItem}`, { redirect_type: 'none' }),
    target: (_r, ids) => ids.sharedItem!,
    check: changesAre({ redirect_type: ['redirect', 'none'] }),
  },
  {
    name: 'shared item delete',
    action: 'shared_item.delete',
    targetType: 'shared_item',
    act: (t, ids) => req(t, 'DELETE', `/api/administration/shared-items/${ids.sharedItem}`),
    target: (_r, ids) => ids.sharedItem!,
    check: (rec) => {
      assert.deepEqual(Object.keys(rec.changes), ['deleted_at'])
      assert.equal(rec.changes.deleted_at[0], null)
      isTimestamp(rec.changes.deleted_at[1])
    },
  },
  {
    name: 'shared item restore',
    action: 'shared_item.restore',
    targetType: 'shared_item',
    act: (t, ids) => req(t, 'POST', `/api/administration/shared-items/${ids.deletedSharedItem}/restore`),
    target: (_r, ids) => ids.deletedSharedItem!,
    check: (rec) => {
      assert.deepEqual(Object.keys(rec.changes), ['deleted_at'])
      isTimestamp(rec.changes.deleted_at[0])
      assert.equal(rec.changes.deleted_at[1], null)
    },
  },
  {
    name: 'automation create',
    action: 'automation.create',
    targetType: 'automation',
    act: (t) => req(t, 'POST', '/api/administration/automations', { name: 'hook', event: '*', actions: [] }),
    target: (r) => r.id,
  },
  {
    name: 'automation update',
    action: 'automation.update',
    targetType: 'automation',
    act: async (t) => {
      const created = (
        await req(t, 'POST', '/api/administration/automations', { name: 'hook', event: '*', actions: [] })
      ).json()
      return req(t, 'PUT', `/api/administration/automations/${created.id}`, { name: 'renamed hook', active: false })
    },
    target: (r) => r.id,
    check: changesAre({ name: ['hook', 'renamed hook'], active: [true, false] }),
  },
  {
    name: 'notification reset',
    action: 'notification.reset',
    targetType: 'tenant',
    act: (t) => req(t, 'DELETE', '/api/administration/notifications/reset'),
    target: (_r, ids) => ids.tenant!,
  },
]

for (const c of CASES) {
  test(`audited: ${c.name}`, async () => {
    const tenant = await given.tenant(db)
    const user = await given.user(db, tenant)
    const folder = (await req(tenant, 'POST', '/api/folders', { type: 'role', name: 'F' })).json().id as number
    const member = await given.user(db, tenant)
    const ids: Record<string, any> = {
      tenant: tenant.id,
      user: user.id,
      member: member.id,
      folder,
      employeeRole: tenant.employeeRoleId,
      otherFolder: await given.folder(db, tenant, { type: 'role' }),
      role: await given.role(db, tenant, [], { name: 'Old role' }),
      department: await given.department(db, tenant, [member.id], 'Old department'),
      grant: await given.grant(db, tenant, { key: 'view', to: ['user', user.id], on: ['folder', folder] }),
      sharedItem: await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: 1 }),
      deletedSharedItem: await given.sharedItem(db, tenant, { type: 'calendarEvent', targetable_id: 1, deleted: true }),
      deletedUser: (await given.user(db, tenant, { deleted_at: '2026-01-02 03:04:05' })).id,
      calendarEvent: await given.content(db, tenant, 'calendar_events', {
        title: 'Kick-off',
        starts_at: '2026-01-05 09:00',
        ends_at: '2026-01-05 10:00',
      }),
    }
    const res = await c.act(tenant, ids)
    assert.ok(res.statusCode < 300, `${c.name}: ${res.statusCode} ${res.body}`)
    const body = res.body
      ? (() => {
          try {
            return res.json()
          } catch {
            return undefined
          }
        })()
      : undefined
    const records = await auditLog(
      tenant,
      `?filter[action]=${c.action}&filter[target_id]=${c.target(body?.data ?? body, ids)}`,
    )
    assert.equal(records.length, 1, `${c.name}: one ${c.action} record`)
    const record = records[0]!
    assert.equal(record.target_type, c.targetType)
    assert.equal(record.target_id, String(c.target(body?.data ?? body, ids)))
    assert.equal(record.actor_id, tenant.adminId)
    assert.equal(record.user_agent, 'audit-test/1.0')
    assert.equal(record.request_id, res.headers['x-request-id'])
    assert.ok(record.ip)
    c.check?.({ ...record, __ids: ids })
  })
}

test('a change that fails writes no audit record (same transaction)', async () => {
  const tenant = await given.tenant(db)
  const role = await given.role(db, tenant, [])
  await given.user(db, tenant, { roleId: role })
  assert.equal((await req(tenant, 'DELETE', `/api/roles/${role}`)).statusCode, 409)
  assert.deepEqual(await auditLog(tenant, '?filter[action]=role.delete'), [])
})

test('filters, sort, limit, streaming, CSV export and permission', async () => {
  const tenant = await given.tenant(db)
  for (const name of ['a', 'b', 'c']) await req(tenant, 'POST', '/api/roles', { name, permissions: [] })
  const all = await auditLog(tenant, '?filter[action]=role.create')
  assert.deepEqual(
    all.map((r) => r.changes.name[1]),
    ['c', 'b', 'a'],
    'newest first',
  )
  const limited = await auditLog(tenant, '?filter[action]=role.create&sort=id&limit=2')
  assert.deepEqual(
    limited.map((r) => r.changes.name[1]),
    ['a', 'b'],
  )
  assert.equal((await auditLog(tenant, `?filter[actor_id]=${tenant.adminId + 1000000}`)).length, 0)
  const csv = await call(await app, tenant.adminToken, {
    method: 'GET',
    url: '/api/administration/audit-log?filter[action]=role.create',
    headers: { accept: 'text/csv' },
  })
  assert.equal(csv.statusCode, 200)
  assert.match(String(csv.headers['content-type']), /^text\/csv/)
  const rows = parse(csv.body, { columns: true }) as Array<Record<string, string>>
  assert.equal(rows.length, 3)
  assert.equal(rows[0]!.action, 'role.create')
  assert.equal(JSON.parse(rows[2]!.changes!).name[1], 'a')
  const other = await given.tenant(db)
  assert.equal((await auditLog(other, '?filter[action]=role.create')).length, 0, 'tenant-scoped')
  const employee = await given.user(db, tenant)
  const denied = await call(await app, employee.token, { method: 'GET', url: '/api/administration/audit-log' })
  assert.equal(denied.statusCode, 403)
  const auditor = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['audit.view']) })
  assert.equal(
    (await call(await app, auditor.token, { method: 'GET', url: '/api/administration/audit-log' })).statusCode,
    200,
  )
})

test('retention purges old records; a black-out anonymizes the user in earlier records', async () => {
  const tenant = await given.tenant(db)
  const user = await given.user(db, tenant, { roleId: await given.role(db, tenant, ['roles.manage', 'roles.view']) })
  const made = await call(await app, user.token, {
    method: 'POST',
    url: '/api/roles',
    payload: { name: 'by-user', permissions: [] },
    headers: { 'user-agent': 'Secret-Browser/9' },
  })
  assert.equal(made.statusCode, 201, made.body)
  const personal = {
    first_name: 'Anna',
    last_name: 'Quist',
    email: 'anna.quist@example.com',
    phone: '+49 30 99887766',
    street: 'Lindenweg 7',
    city: 'Jena',
    birthdate: '1980-05-17',
  }
  assert.equal(
    (await req(tenant, 'PUT', `/api/users/${user.id}`, { ...personal, wants_email_notifications: true })).statusCode,
    200,
  )
  const [updated] = await auditLog(tenant, `?filter[action]=user.update&filter[target_id]=${user.id}`)
  assert.deepEqual(updated!.changes.street, [null, 'Lindenweg 7'], 'recorded before the black-out')
  assert.equal((await req(tenant, 'DELETE', `/api/users/blackout/${user.id}`)).statusCode < 300, true)
  const [anonymized] = await auditLog(tenant, `?filter[action]=user.update&filter[target_id]=${user.id}`)
  for (const field of Object.keys(personal)) assert.equal(anonymized!.changes[field], 'blacked-out', field)
  assert.deepEqual(anonymized!.changes.wants_email_notifications, [false, true], 'non-identifying fields are kept')
  const everything = JSON.stringify(await auditLog(tenant))
  for (const value of ['Quist', 'anna.quist', '99887766', 'Lindenweg', 'Jena', '1980-05-17'])
    assert.ok(!everything.includes(value), value)
  const byUser = await auditLog(tenant, `?filter[actor_id]=${user.id}`)
  assert.equal(byUser.length, 1)
  assert.equal(byUser[0]!.user_agent, null, 'the black-out removed the user agent')
  assert.equal(byUser[0]!.ip, null)
  assert.equal(byUser[0]!.actor_id, user.id, 'ids are kept')
  assert.ok(!JSON.stringify(await auditLog(tenant)).includes('Secret-Browser'))

  await sql`update audit_log set created_at = now() - interval '400 days' where tenant_id = ${tenant.id} and action = 'role.create'`.execute(
    db,
  )
  assert.ok((await purgeAuditLog(db, 365)) >= 1)
  assert.equal((await auditLog(tenant, '?filter[action]=role.create')).length, 0)
  assert.ok((await auditLog(tenant, '?filter[action]=user.blackout')).length === 1, 'recent records stay')
})

test("secret-looking fields are redacted at any depth, whatever a call site passes; a create's diff lists every field with a value", async () => {
  const tenant = await given.tenant(db)
  const changes = {
    ...diff(undefined, { name: 'n', empty: null, skipped: undefined, count: 0 }),
    password: ['old', 'new'],
    password_change_required: [false, true],
    nested: { api_token: 'tok', kept: 1, list: [{ client_secret: 's', value: 'v', note: 'n' }] },
  }
  await recordAudit(db, { tenantId: tenant.id, action: 'test.redaction', targetType: 'test', targetId: 1, changes })

  const row = await db
    .selectFrom('audit_log')
    .select('changes')
    .where('tenant_id', '=', tenant.id)
    .where('action', '=', 'test.redaction')
    .executeTakeFirstOrThrow()
  assert.deepEqual(row.changes, {
    name: [null, 'n'],
    count: [null, 0],
    password: REDACTED,
    password_change_required: [false, true],
    nested: { api_token: REDACTED, kept: 1, list: [{ client_secret: REDACTED, value: REDACTED, note: 'n' }] },
  })
})
