import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { hashPassword } from '../../src/platform/auth/passwords.js'
import { issueAccessToken } from '../../src/platform/auth/tokens.js'
import type { Db } from '../../src/platform/db/schema.js'
import { createTenant } from '../../src/modules/tenants/index.js'

export const TEST_PASSWORD = 'correct-horse-battery'
let passwordHash: Promise<string> | undefined
const hashed = () => (passwordHash ??= hashPassword(TEST_PASSWORD))

export interface GivenTenant {
  id: number
  slug: string
  adminId: number
  adminToken: string
  adminRoleId: number
  employeeRoleId: number
}

export interface GivenUser {
  id: number
  username: string
  token: string
  roleId: number
}

const unique = (prefix: string) => `${prefix}-${randomBytes(5).toString('hex')}`

/** Test factories: every test makes its own tenant, so tests never see each other's rows. */
export const given = {
  /**
   * Exempts the tenant from the fair-use limits (the operator's exemption, decision 0023), for tests that
   * count a request's own statements: the limiter's lease of a chunk of requests is a write of its own.
   */
  async exemptFromLimits(db: Db, tenant: GivenTenant): Promise<void> {
    await db.insertInto('tenant_limits').values({ tenant_id: tenant.id, limits: '{}', exempt: true }).execute()
  },
  async tenant(db: Db): Promise<GivenTenant> {
    const created = await createTenant(db, { slug: unique('t'), adminPassword: TEST_PASSWORD, tokenTtlDays: 30 })
    return {
      id: created.tenant.id,
      slug: created.tenant.slug,
      adminId: created.admin.id,
      adminToken: created.token,
      adminRoleId: created.roles.administratorId,
      employeeRoleId: created.roles.employeeId,
    }
  },

  async role(
    db: Db,
    tenant: GivenTenant,
    permissions: string[],
    overrides: { active?: boolean; name?: string } = {},
  ): Promise<number> {
    const row = await db
      .insertInto('roles')
      .values({
        tenant_id: tenant.id,
        name: overrides.name ?? unique('role'),
        permissions,
        active: overrides.active ?? true,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    return row.id
  },

  async user(
    db: Db,
    tenant: GivenTenant,
    overrides: Record<string, unknown> & { roleId?: number; departmentIds?: number[] } = {},
  ): Promise<GivenUser> {
    const { roleId, departmentIds, ...columns } = overrides
    const username = (columns.username as string) ?? unique('user')
    const row = await db
      .insertInto('users')
      .values({
        tenant_id: tenant.id,
        username,
        password_hash: await hashed(),
        first_name: 'Test',
        last_name: 'User',
        role_id: roleId ?? tenant.employeeRoleId,
        lang_id: 'en-US',
        ...columns,
      } as never)
      .returning(['id', 'role_id'])
      .executeTakeFirstOrThrow()
    for (const departmentId of departmentIds ?? []) {
      await db
        .insertInto('department_users')
        .values({ tenant_id: tenant.id, department_id: departmentId, user_id: row.id })
        .execute()
    }
    const { token } = await issueAccessToken(db, tenant.id, row.id, 30)
    return { id: row.id, username, token, roleId: row.role_id }
  },

  async department(db: Db, tenant: GivenTenant, userIds: number[] = [], name = unique('dept')): Promise<number> {
    const row = await db
      .insertInto('departments')
      .values({ tenant_id: tenant.id, name })
      .returning('id')
      .executeTakeFirstOrThrow()
    if (userIds.length > 0) {
      await db
        .insertInto('department_users')
        .values(userIds.map((user_id) => ({ tenant_id: tenant.id, department_id: row.id, user_id })))
        .execute()
    }
    return row.id
  },

  async grant(
    db: Db,
    tenant: GivenTenant,
    grant: { key: string; to: ['user' | 'role' | 'department', number]; on: [string, number | string] },
  ): Promise<number> {
    const row = await db
      .insertInto('entity_permissions')
      .values({
        tenant_id: tenant.id,
        key: grant.key,
        permission_entity: grant.to[0],
        permission_entity_id: grant.to[1],
        target_entity: grant.on[0],
        target_entity_id: String(grant.on[1]),
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    return row.id
  },

  /** A notification record for `userId` (defaults: unread, unseen, type genericNotification). */
  async notification(
    db: Db,
    tenant: GivenTenant,
    userId: number,
    overrides: {
      type?: string
      targetable_type?: string
      targetable_id?: number
      data?: Record<string, unknown>
      seen_at?: string | null
      read_at?: string | null
      created_at?: string
    } = {},
  ): Promise<string> {
    const row = await db
      .insertInto('notifications')
      .values({
        tenant_id: tenant.id,
        notifiable_id: userId,
        type: overrides.type ?? 'genericNotification',
        targetable_type: overrides.targetable_type ?? 'genericNotification',
        targetable_id: overrides.targetable_id ?? 1,
        source_key: unique('given'),
        data: JSON.stringify(overrides.data ?? { title: 'Hello', body: '<p>Hi</p>', url: '/home' }),
        seen_at: overrides.seen_at ?? null,
        read_at: overrides.read_at ?? null,
        ...(overrides.created_at ? { created_at: overrides.created_at } : {}),
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    return row.id
  },

  /**
   * A folder (with its name as the translation in `langId`, default en-US) under `parentId`, keeping
   * the `path` column the folders service maintains. Returns its id.
   */
  async folder(
    db: Db,
    tenant: GivenTenant,
    options: {
      type?: string
      name?: string
      parentId?: number | null
      langId?: string
      userId?: number
      showOnMenu?: boolean
    } = {},
  ): Promise<number> {
    const parent = options.parentId
      ? await db
          .selectFrom('folders')
          .select(['path', 'type'])
          .where('tenant_id', '=', tenant.id)
          .where('id', '=', options.parentId)
          .executeTakeFirstOrThrow()
      : undefined
    const { rows } = await sql<{ id: string }>`select nextval('global_id_seq') as id`.execute(db)
    const id = Number(rows[0].id)
    const langId = options.langId ?? 'en-US'
    await db
      .insertInto('folders')
      .values({
        id,
        tenant_id: tenant.id,
        type: (options.type ?? parent?.type ?? 'form') as never,
        parent_id: options.parentId ?? null,
        lang_id: langId,
        icon_id: null,
        show_on_menu: options.showOnMenu ?? false,
        user_id: options.userId ?? tenant.adminId,
        path: [...(parent?.path ?? []), id],
      })
      .execute()
    await db
      .insertInto('folder_translations')
      .values({ tenant_id: tenant.id, folder_id: id, lang_id: langId, name: options.name ?? unique('folder') })
      .execute()
    return id
  },

  /** A shared item row (defaults: redirect_type `redirect`, empty config, created by the tenant admin). Returns its id. */
  async sharedItem(
    db: Db,
    tenant: GivenTenant,
    item: {
      type: string
      targetable_id: number | string
      targetable_type?: string
      redirect_type?: string
      config?: Record<string, unknown>
      userId?: number
      deleted?: boolean
    },
  ): Promise<string> {
    const row = await db
      .insertInto('shared_items')
      .values({
        tenant_id: tenant.id,
        user_id: item.userId ?? tenant.adminId,
        type: item.type,
        redirect_type: item.redirect_type ?? 'redirect',
        targetable_type: item.targetable_type ?? item.type,
        targetable_id: String(item.targetable_id),
        config: JSON.stringify(item.config ?? {}),
        ...(item.deleted ? { deleted_at: sql`now()` as never } : {}),
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    return row.id
  },

  /**
   * A content record (contract 30) inserted directly, e.g. `given.content(db, t, 'forms', { name: 'F', folder_id: 7 })`,
   * authored by the tenant admin unless `user_id` is given. Returns its id.
   */
  async content(db: Db, tenant: GivenTenant, table: string, columns: Record<string, unknown>): Promise<number> {
    const values = { tenant_id: tenant.id, user_id: tenant.adminId, ...columns }
    const { rows } = await sql<{
      id: number
    }>`insert into ${sql.table(table)} (${sql.join(Object.keys(values).map((c) => sql.ref(c)))})
      values (${sql.join(Object.values(values))}) returning id`.execute(db)
    return Number(rows[0]!.id)
  },

  /** Moves a timestamp column into the past (e.g. to expire a token) without waiting. */
  async expireToken(db: Db, token: string): Promise<void> {
    const { hashAccessToken } = await import('../../src/platform/auth/tokens.js')
    await db
      .updateTable('access_tokens')
      .set({ expires_at: sql`now() - interval '1 second'` as never })
      .where('token_hash', '=', hashAccessToken(token))
      .execute()
  },
}
