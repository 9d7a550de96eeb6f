import { type Selectable, sql } from 'kysely'
import type { UsersTable } from '../../platform/db/schema.js'
import { can } from '../../platform/auth/permissions.js'
import { defineResource, type QueryContext } from '../../platform/query/resource.js'
import { groupBy } from '../../platform/group-by.js'
// a cycle (users.queries presents users through this resource), read only when a relation loads
import { departmentsOfUsers } from './users.queries.js'

/** The related resource's whole record only for a caller who may read that resource (else its id and name). */
const mayReadRelated = (ctx: QueryContext, permission: string) => ctx.actor !== undefined && can(ctx.actor, permission)

const extended = (ctx: QueryContext) => ctx.flags?.extendedFields === true
/** The caller may read extended fields (its own on a show, or anyone's with users.viewDetails / users.administrate). */
const readsExtended = (ctx: QueryContext) => extended(ctx) || ctx.flags?.readsDetails === true
const fullName = (row: { first_name?: unknown; last_name?: unknown }) =>
  `${row.first_name ?? ''} ${row.last_name ?? ''}`.trim()

/**
 * The texts `filter[text]` searches, identical to the expressions of the trigram indexes
 * `users_search_trgm` (migration 0010: every field) and `users_basic_search_trgm` (migration 0120:
 * the basic fields, for callers who may not read email and staff number), so that `ilike '%…%'` is
 * served by an index whichever the caller may read.
 */
const USER_SEARCH_TEXT = sql`(u.username || chr(31) || u.first_name || ' ' || u.last_name || chr(31) || coalesce(u.email, '') || chr(31) || coalesce(u.staff_number, ''))`
const USER_BASIC_SEARCH_TEXT = sql`(u.username || chr(31) || u.first_name || ' ' || u.last_name)`
const SEARCHED = ['username', 'first_name', 'last_name', 'full_name', 'email', 'staff_number']

/** `filter[text]`: username, names and full name; email and staff number only for callers who may read them. */
function searchText(readable: readonly string[]) {
  if (readable.length === SEARCHED.length) return USER_SEARCH_TEXT
  if (readable.length === 4 && !readable.includes('email') && !readable.includes('staff_number'))
    return USER_BASIC_SEARCH_TEXT
  return undefined
}

/** Selectable, filterable and sortable fields of a user, and its relations (contract 10). */
/** The columns the computed fields and the relations read. */
type UserResourceRow = Pick<
  Selectable<UsersTable>,
  'id' | 'first_name' | 'last_name' | 'profile_picture' | 'role_id' | 'lang_id'
>

export const userResource = defineResource<UserResourceRow>({
  name: 'user',
  alias: 'u',
  uniqueKey: 'id',
  defaultSort: ['id'],
  textSearch: { fields: SEARCHED, text: searchText },
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
    street: { type: 'string', visible: extended, readable: readsExtended },
    zipcode: { type: 'string', visible: extended, readable: readsExtended },
    city: { type: 'string', visible: extended, readable: readsExtended },
    email: { type: 'string', visible: extended, readable: readsExtended },
    phone: { type: 'string', visible: extended, readable: readsExtended },
    birthdate: { type: 'date', visible: extended, readable: readsExtended },
    gender: { type: 'string', visible: extended, readable: readsExtended },
    entering_date: { type: 'date', visible: extended, readable: readsExtended },
    leaving_date: { type: 'date', visible: extended, readable: readsExtended },
    staff_number: { type: 'string', visible: extended, readable: readsExtended },
    wants_email_notifications: { type: 'boolean', visible: extended, readable: readsExtended },
    default_route: { type: 'string', visible: extended, readable: readsExtended },
    prevent_logout: { type: 'boolean', visible: extended, readable: readsExtended },
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
        // the role's record for whoever may read roles; its name for anyone else (issue 33: a relation
        // tells no more than the related resource's own routes would)
        const rows = await ctx.db
          .selectFrom('roles')
          .select(
            mayReadRelated(ctx, 'roles.view')
              ? ['id', 'name', 'permissions', 'active', 'folder_id', 'created_at', 'updated_at']
              : ['id', 'name'],
          )
          .where('tenant_id', '=', ctx.tenantId)
          .where('id', 'in', ids)
          .execute()
        return new Map(rows.map((r) => [r.id, r]))
      },
    },
    language: {
      key: 'lang_id',
      many: false,
      load: async (ctx, ids) => {
        const rows = await ctx.db.selectFrom('languages').select(['id', 'name']).where('id', 'in', ids).execute()
        return new Map(rows.map((r) => [r.id, r]))
      },
    },
    departments: {
      key: 'id',
      many: true,
      load: async (ctx, ids) => {
        const rows = await departmentsOfUsers(ctx.db, ctx.tenantId, ids, {
          full: mayReadRelated(ctx, 'departments.view'),
        })
        return groupBy(
          rows,
          (row) => row.user_id,
          ({ user_id: _, ...department }) => department,
        )
      },
    },
    acceptedPolicies: { key: 'id', many: true, load: async () => new Map() },
    // a user's grants name targets and keys: only for who may manage grants (issue 33; contract correction)
    entityPermissions: {
      key: 'id',
      many: true,
      visible: (ctx) => ctx.actor !== undefined && can(ctx.actor, 'entityPermissions.manage'),
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
          .where('permission_entity_id', 'in', ids)
          .orderBy('id')
          .execute()
        return groupBy(rows, (row) => row.permission_entity_id)
      },
    },
  },
})
