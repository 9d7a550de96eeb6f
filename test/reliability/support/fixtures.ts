import { randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../../../src/platform/db/schema.js'
import { given, type GivenTenant, type GivenUser } from '../../helpers/given.js'
import { listTenantTables } from './fingerprint.js'

/** One row of every resource kind in a tenant, so that every route with an ID has a target. */
export interface TenantFixtures {
  tenant: GivenTenant
  employee: GivenUser
  victim: GivenUser
  /** The id of `victim`'s access token (a session). */
  victimSessionId: number
  deletedUserId: number
  roleId: number
  departmentId: number
  notificationId: string
  notificationSettingId: number
  /** A push subscription of `employee`. */
  pushSubscriptionId: number
  automationId: number
  deliveryId: number
  scimTokenId?: number
  /** Present once the folders module (and its table) exists. */
  folderId?: number
  /** Present once the entity-permissions table exists and a folder can carry a grant. */
  grantId?: number
  /** One row per content / shared-item table that exists, by table name. */
  content: Record<string, number | string>
}

/** Minimal rows of the content modules' tables (contract 30) and shared items, inserted in order. */
const CONTENT_ROWS: Array<[string, (ids: Record<string, number | string>) => Record<string, unknown> | undefined]> = [
  ['calendar_events', () => ({ title: 'fixture', starts_at: sql`now()`, ends_at: sql`now()` })],
  ['filemanager_directories', () => ({ name: 'fixture' })],
  [
    'filemanager_files',
    () => ({ name: 'fixture.txt', size: 1, media_type: 'text/plain', storage_name: 'missing-fixture' }),
  ],
  ['forms', () => ({ name: 'fixture' })],
  ['form_messages', (ids) => (ids.forms ? { form_id: ids.forms, data: JSON.stringify({}) } : undefined)],
  ['infoboard_posts', () => ({ title: 'fixture', body: 'fixture' })],
  [
    'infoboard_comments',
    (ids) => (ids.infoboard_posts ? { post_id: ids.infoboard_posts, body: 'fixture' } : undefined),
  ],
  ['manual_chapters', () => ({ title: 'fixture' })],
  [
    'manual_entries',
    (ids) => (ids.manual_chapters ? { chapter_id: ids.manual_chapters, title: 'fixture', body: 'fixture' } : undefined),
  ],
  ['task_executions', () => ({ title: 'fixture' })],
  [
    'shared_items',
    (ids) =>
      ids.forms
        ? {
            type: 'form',
            redirect_type: 'redirect',
            targetable_type: 'form',
            targetable_id: String(ids.forms),
            config: JSON.stringify({}),
          }
        : undefined,
  ],
]

/** Builds the fixtures set-based through the database (no HTTP), so the route sweep starts from a known state. */
export async function buildTenantFixtures(db: Db): Promise<TenantFixtures> {
  const tenant = await given.tenant(db)
  const tables = new Set(await listTenantTables(db))
  const employee = await given.user(db, tenant)
  const victim = await given.user(db, tenant)
  const { id: victimSessionId } = await db
    .selectFrom('access_tokens')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .where('user_id', '=', victim.id)
    .executeTakeFirstOrThrow()
  const deleted = await given.user(db, tenant, { deleted_at: sql`now()` })
  const roleId = await given.role(db, tenant, ['users.view'])
  const departmentId = await given.department(db, tenant, [employee.id, victim.id])
  const notificationId = await given.notification(db, tenant, employee.id)
  await given.notification(db, tenant, tenant.adminId)
  const setting = await db
    .selectFrom('notification_settings')
    .select('id')
    .where('tenant_id', '=', tenant.id)
    .orderBy('id')
    .executeTakeFirst()
  const notificationSettingId =
    setting?.id ??
    (
      await db
        .insertInto('notification_settings')
        .values({ tenant_id: tenant.id, key: 'fixture', sort_number: 1 } as never)
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id
  const subscription = await db
    .insertInto('push_subscriptions')
    .values({
      tenant_id: tenant.id,
      user_id: employee.id,
      endpoint: `https://push.example.test/${randomUUID()}`,
      p256dh: 'BAAA',
      auth: 'AAAA',
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  const automation = (await db
    .insertInto('automations' as never)
    .values({
      tenant_id: tenant.id,
      name: 'fixture automation',
      event: 'user.updated',
      active: false,
      actions: JSON.stringify([
        { type: 'webhook', config: { url: 'https://hooks.example.test/in', method: 'POST', headers: {}, auth: null } },
      ]),
      user_id: tenant.adminId,
    } as never)
    .returning('id' as never)
    .executeTakeFirstOrThrow()) as { id: number }
  const delivery = (await db
    .insertInto('webhook_deliveries' as never)
    .values({
      tenant_id: tenant.id,
      automation_id: automation.id,
      action_index: 0,
      event_id: randomUUID(),
      event_type: 'user.updated',
      event_timestamp: '2026-01-01T00:00:00Z',
      event_data: JSON.stringify({}),
      url: 'https://hooks.example.test/in',
      method: 'POST',
      status: 'failed',
      attempts: 1,
    } as never)
    .returning('id' as never)
    .executeTakeFirstOrThrow()) as { id: number }
  const scimToken = tables.has('scim_tokens')
    ? await db
        .insertInto('scim_tokens')
        .values({ tenant_id: tenant.id, name: 'fixture', token_hash: randomBytes(32), default_role_id: roleId })
        .returning('id')
        .executeTakeFirstOrThrow()
    : undefined
  let folderId: number | undefined
  let grantId: number | undefined
  if (tables.has('folders')) {
    folderId = await given.folder(db, tenant, { type: 'form' })
    if (tables.has('entity_permissions'))
      grantId = await given.grant(db, tenant, { key: 'view', to: ['user', employee.id], on: ['folder', folderId] })
  }
  const content: Record<string, number | string> = {}
  for (const [table, values] of CONTENT_ROWS) {
    const row = tables.has(table) ? values(content) : undefined
    if (!row) continue
    const inserted = (await db
      .insertInto(table as never)
      .values({ tenant_id: tenant.id, user_id: tenant.adminId, ...row } as never)
      .returning('id' as never)
      .executeTakeFirstOrThrow()) as { id: number | string }
    content[table] = inserted.id
  }
  return {
    content,
    tenant,
    employee,
    victim,
    victimSessionId,
    deletedUserId: deleted.id,
    roleId,
    departmentId,
    notificationId,
    notificationSettingId,
    pushSubscriptionId: subscription.id,
    automationId: automation.id,
    deliveryId: delivery.id,
    scimTokenId: scimToken?.id,
    folderId,
    grantId,
  }
}

let idTables: Promise<string[]> | undefined

/** Every id a tenant owns (global sequence ids and uuids): any of them in another tenant's response is a leak. */
export async function tenantIds(db: Db, tenantId: number): Promise<Set<string>> {
  idTables ??= sql<{ table_name: string }>`
    select c.table_name from information_schema.columns c
    where c.table_schema = 'public' and c.column_name = 'id'
      and (c.column_default like '%global_id_seq%' or c.data_type = 'uuid')
      and exists (select 1 from information_schema.columns t where t.table_schema = 'public' and t.table_name = c.table_name and t.column_name = 'tenant_id')`
    .execute(db)
    .then((r) => r.rows.map((row) => row.table_name))
  const tables = await idTables
  const ids = new Set<string>()
  if (tables.length === 0) return ids
  const query = tables
    .map((t) => `select id::text as id from "${t}" where tenant_id = ${Number(tenantId)}`)
    .join(' union all ')
  for (const row of (await sql.raw<{ id: string }>(query).execute(db)).rows) ids.add(row.id)
  return ids
}

/** Ids of `ids` found in `value` under an `id`/`*_id`/`*_ids` key (any depth). */
export function leakedIds(value: unknown, ids: Set<string>): string[] {
  const found = new Set<string>()
  const visit = (node: unknown, key: string | undefined) => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item, key)
    } else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) visit(v, k)
    } else if (
      (typeof node === 'number' || typeof node === 'string') &&
      key &&
      /(^id$|_id$|_ids$)/.test(key) &&
      ids.has(String(node))
    ) {
      found.add(String(node))
    }
  }
  visit(value, undefined)
  return [...found]
}
