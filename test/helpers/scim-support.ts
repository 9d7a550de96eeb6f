import assert from 'node:assert/strict'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { call } from './build-test-app.js'
import type { GivenTenant } from './given.js'

export const SCIM_JSON = 'application/scim+json'
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User'
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group'
export const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error'

/** A SCIM token of the tenant, issued through the API by its administrator. */
export async function scimToken(
  app: FastifyInstance,
  tenant: GivenTenant,
  name = 'Entra ID',
): Promise<{ id: number; token: string }> {
  const res = await call(app, tenant.adminToken, {
    method: 'POST',
    url: '/api/administration/scim-tokens',
    payload: { name },
  })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

/** A request to /scim/v2 with a SCIM token and a SCIM JSON body. */
export function scim(
  app: FastifyInstance,
  token: string | undefined,
  method: InjectOptions['method'],
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  return call(app, token, {
    method,
    url: `/scim/v2${path}`,
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    headers: { ...(body === undefined ? {} : { 'content-type': SCIM_JSON }), ...headers },
  })
}

/** An RFC 7644 error answer with this status and scimType. */
export function assertScimError(
  res: { statusCode: number; body: string; headers: Record<string, unknown> },
  status: number,
  scimType?: string,
) {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/scim\+json/)
  const body = JSON.parse(res.body) as { schemas: string[]; status: unknown; scimType?: string }
  assert.deepEqual(body.schemas, [ERROR_SCHEMA])
  assert.equal(body.status, String(status))
  if (scimType) assert.equal(body.scimType, scimType, res.body)
}

export const newUser = (userName: string, extra: Record<string, unknown> = {}) => ({
  schemas: [USER_SCHEMA],
  userName,
  name: { givenName: 'Anna', familyName: 'Berg' },
  emails: [{ value: `${userName.split('@')[0]}@example.com`, type: 'work', primary: true }],
  active: true,
  ...extra,
})
