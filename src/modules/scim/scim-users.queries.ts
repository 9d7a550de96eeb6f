import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import { constant, filterToSql, scalar, type AttributeMap } from './scim-filter.queries.js'
import { filteredPage, versionColumn, type ListPage } from './scim.queries.js'
import { CORE_USER, ENTERPRISE_USER } from './scim.schemas.js'

const USER_COLUMNS = [
  'u.id',
  'u.username',
  'u.first_name',
  'u.last_name',
  'u.email',
  'u.phone',
  'u.active',
  'u.lang_id',
  'u.staff_number',
  'u.external_id',
  'u.created_at',
  'u.updated_at',
] as const

const ENTERPRISE = ENTERPRISE_USER.toLowerCase()
const fullName = sql`trim(u.first_name || ' ' || u.last_name)`

/** The filterable attributes of a User and their columns (docs/scim.md lists which are indexed). */
export function userAttributes(tenantId: number): AttributeMap {
  return {
    id: scalar('id', sql`u.id`),
    externalid: scalar('string', sql`u.external_id`, true),
    username: scalar('string', sql`u.username`),
    'name.givenname': scalar('string', sql`u.first_name`),
    'name.familyname': scalar('string', sql`u.last_name`),
    'name.formatted': scalar('string', fullName),
    displayname: scalar('string', fullName),
    active: scalar('boolean', sql`u.active`),
    preferredlanguage: scalar('string', sql`u.lang_id`),
    [`${ENTERPRISE}:employeenumber`]: scalar('string', sql`u.staff_number`, true),
    'meta.created': scalar('datetime', sql`u.created_at`),
    'meta.lastmodified': scalar('datetime', sql`u.updated_at`),
    emails: {
      kind: 'multi',
      main: 'value',
      present: sql<boolean>`u.email is not null`,
      sub: { value: scalar('string', sql`u.email`), type: constant('work'), primary: constant(true) },
    },
    phonenumbers: {
      kind: 'multi',
      main: 'value',
      present: sql<boolean>`u.phone is not null`,
      sub: { value: scalar('string', sql`u.phone`), type: constant('work'), primary: constant(true) },
    },
    groups: {
      kind: 'multi',
      main: 'value',
      sub: { value: scalar('id', sql`du.department_id`) },
      // the tenant named in the subquery itself, so that Citus routes it (docs/citus.md)
      exists: (condition) =>
        sql<boolean>`exists (select 1 from department_users du where du.tenant_id = ${tenantId} and du.user_id = u.id and ${condition})`,
    },
  }
}

/** The tenant's users SCIM sees: neither deleted nor blacked out (alias `u`). */
const selectScimUsers = (db: Db, tenantId: number) =>
  db
    .selectFrom('users as u')
    .where('u.tenant_id', '=', tenantId)
    .where('u.deleted_at', 'is', null)
    .where('u.blacked_out_at', 'is', null)

export const findScimUser = (db: Db, tenantId: number, id: number) =>
  selectScimUsers(db, tenantId)
    .select([...USER_COLUMNS, versionColumn('u')])
    .where('u.id', '=', id)
    .executeTakeFirst()

/** A SCIM filter on users as SQL (400 invalidFilter when it is none). */
export const usersFilter = (tenantId: number, filter: string) =>
  filterToSql(filter, { attributes: userAttributes(tenantId), coreSchema: CORE_USER })

/** GET /Users: the users the filter keeps, one page of them and their total. */
export async function scimUsersPage(db: Db, tenantId: number, filter: RawBuilder<boolean> | undefined, page: ListPage) {
  return filteredPage(
    selectScimUsers(db, tenantId),
    filter,
    (where) => where.select([...USER_COLUMNS, versionColumn('u')]),
    'u.id',
    page,
  )
}
