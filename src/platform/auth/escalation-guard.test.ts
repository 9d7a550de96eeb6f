/**
 * One escalation guard (issue 40 item 2, `holdsEvery` in platform/auth/permissions.ts): every path
 * that hands out permissions, or takes over an account holding them, refuses an actor who does not
 * hold every permission concerned, with one error shape: 403 `exceeds_own_permissions` naming the field.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { InjectOptions } from 'fastify'
import { buildTestApp, call } from '../../../test/helpers/build-test-app.js'
import { given, TEST_PASSWORD } from '../../../test/helpers/given.js'
import { multipart } from '../../../test/fixtures/users/forms.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()

/** Everything a user administrator may hold short of `*`. */
const MANAGER = [
  'users.view',
  'users.create',
  'users.update',
  'users.administrate',
  'roles.view',
  'roles.manage',
  'departments.manage',
  'tenant.administrate',
]

interface Case {
  path: string
  /** The request, given the `*` role, a `*` user and the manager's own role. */
  request(ids: { adminRoleId: number; adminId: number; managerRoleId: number }): InjectOptions
  field: string
}

const cases: Case[] = [
  {
    path: 'role assignment (POST /api/users)',
    request: ({ adminRoleId }) => ({
      method: 'POST',
      url: '/api/users',
      payload: { username: 'climber', password: TEST_PASSWORD, first_name: 'C', last_name: 'L', role_id: adminRoleId },
    }),
    field: 'role_id',
  },
  {
    path: "user update: a * user's email (PUT /api/users/{id})",
    request: ({ adminId }) => ({ method: 'PUT', url: `/api/users/${adminId}`, payload: { email: 'mine@evil.test' } }),
    field: 'email',
  },
  {
    path: 'role permission edit (PUT /api/roles/{id})',
    request: ({ managerRoleId }) => ({
      method: 'PUT',
      url: `/api/roles/${managerRoleId}`,
      payload: { permissions: [...MANAGER, '*'] },
    }),
    field: `permissions.${MANAGER.length}`,
  },
  {
    path: 'OIDC default role (PUT /api/administration/oidc)',
    request: ({ adminRoleId }) => ({
      method: 'PUT',
      url: '/api/administration/oidc',
      payload: {
        issuer: 'https://login.example.com',
        client_id: 'x',
        client_secret: 'y',
        provisioning: 'create',
        default_role_id: adminRoleId,
      },
    }),
    field: 'default_role_id',
  },
  {
    path: 'SCIM token default role (POST /api/administration/scim-tokens)',
    request: ({ adminRoleId }) => ({
      method: 'POST',
      url: '/api/administration/scim-tokens',
      payload: { name: 'idp', default_role_id: adminRoleId },
    }),
    field: 'default_role_id',
  },
  {
    path: 'CSV import (POST /api/users/csv)',
    request: ({ adminRoleId }) => ({
      method: 'POST',
      url: '/api/users/csv',
      ...multipart(
        {},
        {
          user_data_csv: {
            bytes: Buffer.from(`username,first_name,last_name,role_id\nclimber2,C,L,${adminRoleId}\n`),
            filename: 'users.csv',
            contentType: 'text/csv',
          },
        },
      ),
    }),
    field: 'rows.2.role_id',
  },
  {
    path: "removing a * user's TOTP (DELETE /api/users/{id}/totp)",
    request: ({ adminId }) => ({ method: 'DELETE', url: `/api/users/${adminId}/totp` }),
    field: 'id',
  },
  {
    path: 'linking an identity to a * user (PUT /api/users/{id}/oidc-identity)',
    request: ({ adminId }) => ({
      method: 'PUT',
      url: `/api/users/${adminId}/oidc-identity`,
      payload: { subject: 's' },
    }),
    field: 'subject',
  },
]

for (const c of cases)
  test(`escalation guard: ${c.path} → 403 exceeds_own_permissions naming ${c.field}`, async () => {
    const app = await buildTestApp()
    const tenant = await given.tenant(db)
    const managerRoleId = await given.role(db, tenant, MANAGER)
    const manager = await given.user(db, tenant, { roleId: managerRoleId })
    const res = await call(
      app,
      manager.token,
      c.request({ adminRoleId: tenant.adminRoleId, adminId: tenant.adminId, managerRoleId }),
    )
    assert.equal(res.statusCode, 403, res.body)
    assert.equal(res.headers['content-type'], 'application/problem+json')
    assert.equal(res.json().code, 'exceeds_own_permissions')
    assert.deepEqual(Object.keys(res.json().errors), [c.field])
  })
