import type { Db } from '../src/platform/db/schema.js'
import type { SeededTenant } from './seed.js'

export interface BenchRequest { path: string; method?: string; body?: string; headers?: Record<string, string> }

export interface Scenario {
  id: string
  title: string
  target: number
  /** Also run on the small data set: full-size p50 must stay within 1.5× (contract 90). */
  scaling?: boolean
  request: (tenant: SeededTenant, db: Db) => Promise<BenchRequest> | BenchRequest
  baseline: (tenant: SeededTenant, db: Db) => Promise<BenchRequest> | BenchRequest
}

const auth = (token: string) => ({ authorization: `Bearer ${token}` })

async function someNotificationId(db: Db, tenant: SeededTenant): Promise<string> {
  const row = await (db as any).selectFrom('notifications').select('id').where('tenant_id', '=', tenant.tenantId).where('notifiable_id', '=', tenant.userId).limit(1).executeTakeFirst()
  return row?.id ?? '00000000-0000-4000-8000-000000000000'
}

async function existingGrant(db: Db, tenant: SeededTenant) {
  const row = await (db as any).selectFrom('entity_permissions').select(['key', 'permission_entity', 'permission_entity_id', 'target_entity', 'target_entity_id'])
    .where('tenant_id', '=', tenant.tenantId).where('target_entity', '=', 'folder').orderBy('id').limit(1).executeTakeFirst()
  return row ? { ...row, target_entity_id: Number(row.target_entity_id) } : {}
}

/** Contract 90 scenarios S1–S9 (those whose modules exist; others report n/a). */
export const scenarios: Scenario[] = [
  {
    id: 'S1', title: 'GET /api/users/current', target: 0.5,
    request: (t) => ({ path: '/api/users/current', headers: auth(t.userToken) }),
    baseline: (t) => ({ path: `/users/${t.userId}?tenant=${t.tenantId}` }),
  },
  {
    id: 'S2', title: 'GET /api/notifications/count?filter[read_at]=null', target: 0.6, scaling: true,
    request: (t) => ({ path: '/api/notifications/count?filter%5Bread_at%5D=null', headers: auth(t.userToken) }),
    baseline: (t) => ({ path: `/notifications/count?tenant=${t.tenantId}&user=${t.userId}` }),
  },
  {
    id: 'S3', title: 'GET /api/notifications?limit=50', target: 0.7, scaling: true,
    request: (t) => ({ path: '/api/notifications?limit=50', headers: auth(t.userToken) }),
    baseline: (t) => ({ path: `/notifications?tenant=${t.tenantId}&user=${t.userId}` }),
  },
  {
    id: 'S4', title: 'GET /api/shared-items?limit=50', target: 0.7, scaling: true,
    request: (t) => ({ path: '/api/shared-items?limit=50', headers: auth(t.userToken) }),
    baseline: (t) => ({ path: `/shared-items?tenant=${t.tenantId}&user=${t.userId}` }),
  },
  {
    id: 'S5', title: 'GET /api/folders?filter[type]=form', target: 0.7, scaling: true,
    request: (t) => ({ path: '/api/folders?filter%5Btype%5D=form', headers: auth(t.userToken) }),
    baseline: (t) => ({ path: `/folders?tenant=${t.tenantId}&user=${t.userId}&type=form` }),
  },
  {
    id: 'S6', title: 'GET /api/users?limit=100&filter[text]=ann (admin)', target: 0.7,
    request: (t) => ({ path: '/api/users?limit=100&filter%5Btext%5D=ann', headers: auth(t.adminToken) }),
    baseline: (t) => ({ path: `/users?tenant=${t.tenantId}&text=ann` }),
  },
  {
    id: 'S7', title: 'PUT /api/notifications/{id} {read_at}', target: 0.6,
    request: async (t, db) => ({ path: `/api/notifications/${await someNotificationId(db, t)}`, method: 'PUT', body: JSON.stringify({ read_at: '2026-01-01 10:00:00' }), headers: auth(t.userToken) }),
    baseline: async (t, db) => ({ path: `/notifications/${await someNotificationId(db, t)}?tenant=${t.tenantId}&user=${t.userId}`, method: 'PUT', body: '{}' }),
  },
  {
    id: 'S8', title: 'POST /api/entity-permissions repeating one existing grant', target: 0.6,
    request: async (t, db) => ({ path: '/api/entity-permissions', method: 'POST', body: JSON.stringify(await existingGrant(db, t)), headers: auth(t.adminToken) }),
    baseline: async (t, db) => ({ path: `/entity-permissions?tenant=${t.tenantId}`, method: 'POST', body: JSON.stringify(await existingGrant(db, t)) }),
  },
  {
    id: 'S9', title: 'GET /api/users/{id} (admin)', target: 0.5,
    request: (t) => ({ path: `/api/users/${t.userId}`, headers: auth(t.adminToken) }),
    baseline: (t) => ({ path: `/users/${t.userId}?tenant=${t.tenantId}` }),
  },
]
