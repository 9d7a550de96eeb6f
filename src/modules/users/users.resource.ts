import { type Expression, type SqlBool, sql } from 'kysely'
import { invalidField } from '../../platform/http/errors.js'
import { defineResource, type QueryContext } from '../../platform/query/resource.js'

const extended = (ctx: QueryContext) => ctx.flags?.extendedFields === true
const fullName = (row: { first_name?: unknown; last_name?: unknown }) =>
  `${row.first_name ?? ''} ${row.last_name ?? ''}`.trim()

/**
 * The text `filter[text]` searches: identical to the expression of the trigram index
 * `users_search_trgm` (migration 0010), so that `ilike '%…%'` is served by that index.
 */
const USER_SEARCH_TEXT = sql`(u.username || chr(31) || u.first_name || ' ' || u.last_name || chr(31) || coalesce(u.email, '') || chr(31) || coalesce(u.staff_number, ''))`

/** `filter[text]`: case-insensitive substring over username, names, full name, email and staff number. */
function textFilter(value: unknown): Expression<SqlBool> {
  if (typeof value !== 'string' || value.length > 255)
    throw invalidField('filter.text', 'must be a string of at most 255 characters')
  // control characters (the column separator among them) can never match; LIKE wildcards are literal
  const term = value.replace(/[\x00-\x1f]/g, '').replace(/[\\%_]/g, (c) => `\\${c}`)
  return sql<SqlBool>`${USER_SEARCH_TEXT} ilike ${`%${term}%`}`
}

/** Selectable, filterable and sortable fields of a user, and its relations (contract 10). */
export const userResource = defineResource<Record<string, any>>({
  name: 'user',
  alias: 'u',
  uniqueKey: 'id',
  defaultSort: ['id'],
  customFilters: { text: textFilter },
  fields: {
    id: { type: 'id' },
    username: { type: 'string' },
    first_name: { type: 'string' },
    last_name: { type: 'string' },
    full_name: { type: 'string', sql: sql`trim(u.first_name || ' ' || u.last_name)` },
    active: { type: 'boolean' },
    group_account: { type: 'boolean' },
    role_id: { type: 'id' },
    lang_id: { type: 'string' },
    profile_picture: { type: 'string' },
    created_at: { type: 'timestamp' },
    updated_at: { type: 'timestamp' },
    deleted_at: { type: 'timestamp' },
    blacked_out_at: { type: 'timestamp' },
    street: { type: 'string', visible: extended },
    zipcode: { type: 'string', visible: extended },
    city: { type: 'string', visible: extended },
    email: { type: 'string', visible: extended },
    phone: { type: 'string', visible: extended },
    birthdate: { type: 'date', visible: extended },
    gender: { type: 'string', visible: extended },
    entering_date: { type: 'date', visible: extended },
    leaving_date: { type: 'date', visible: extended },
    staff_number: { type: 'string', visible: extended },
    wants_email_notifications: { type: 'boolean', visible: extended },
    default_route: { type: 'string', visible: extended },
    prevent_logout: { type: 'boolean', visible: extended },
    profile_picture_url: {
      type: 'string',
      requires: ['id', 'profile_picture'],
      compute: (row, ctx) =>
        row.profile_picture
          ? `${ctx.baseUrl}/users/${row.id}/profile-picture/${encodeURIComponent(row.profile_picture)}`
          : null,
    },
    static_url: { type: 'string', requires: ['id'], compute: (row, ctx) => `${ctx.baseUrl}/api/users/${row.id}` },
    url: { type: 'string', requires: ['id'], compute: (row, ctx) => `${ctx.appUrl}/users/${row.id}` },
    url_context: {
      type: 'json',
      requires: ['id', 'first_name', 'last_name'],
      compute: (row, ctx) => ({ type: 'user', id: row.id, title: fullName(row), url: `${ctx.appUrl}/users/${row.id}` }),
    },
  },
  relations: {
    role: {
      key: 'role_id',
      many: false,
      load: async (ctx, ids) => {
        const rows = await ctx.db
          .selectFrom('roles')
          .select(['id', 'name', 'permissions', 'active', 'folder_id', 'created_at', 'updated_at'])
          .where('tenant_id', '=', ctx.tenantId)
          .where('id', 'in', ids as number[])
          .execute()
        return new Map(rows.map((r) => [r.id, r]))
      },
    },
    language: {
      key: 'lang_id',
      many: false,
      load: async (ctx, ids) => {
        const rows = await ctx.db
          .selectFrom('languages')
          .select(['id', 'name'])
          .where('id', 'in', ids as string[])
          .execute()
        return new Map(rows.map((r) => [r.id, r]))
      },
    },
    departments: {
      key: 'id',
      many: true,
      load: async (ctx, ids) => {
        const rows = await ctx.db
          .selectFrom('department_users as du')
          .innerJoin('departments as d', (j) =>
            j.onRef('d.id', '=', 'du.department_id').onRef('d.tenant_id', '=', 'du.tenant_id'),
          )
          .select([
            'du.user_id',
            'd.id',
            'd.name',
            'd.folder_id',
            'd.notification_setting_id',
            'd.created_at',
            'd.updated_at',
          ])
          .where('du.tenant_id', '=', ctx.tenantId)
          .where('du.user_id', 'in', ids as number[])
          .orderBy('d.id')
          .execute()
        const byUser = new Map<unknown, unknown[]>()
        for (const { user_id, ...department } of rows) byUser.set(user_id, [...(byUser.get(user_id) ?? []), department])
        return byUser
      },
    },
    acceptedPolicies: { key: 'id', many: true, load: async () => new Map() },
    entityPermissions: {
      key: 'id',
      many: true,
      load: async (ctx, ids) => {
        const rows = await ctx.db
          .selectFrom('entity_permissions')
          .select([
            'id',
            'key',
            'permission_entity',
            'permission_entity_id',
            'target_entity',
            'target_entity_id',
            'created_at',
            'updated_at',
          ])
          .where('tenant_id', '=', ctx.tenantId)
          .where('permission_entity', '=', 'user')
          .where('permission_entity_id', 'in', ids as number[])
          .orderBy('id')
          .execute()
        const byUser = new Map<unknown, unknown[]>()
        for (const row of rows)
          byUser.set(row.permission_entity_id, [...(byUser.get(row.permission_entity_id) ?? []), row])
        return byUser
      },
    },
  },
})
