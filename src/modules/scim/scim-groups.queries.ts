import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import { filterToSql, scalar, type AttributeMap } from './scim-filter.queries.js'
import { filteredPage, versionColumn, type ListPage } from './scim.queries.js'
import { CORE_GROUP } from './scim.schemas.js'

const GROUP_COLUMNS = ['d.id', 'd.name', 'd.external_id', 'd.created_at', 'd.updated_at'] as const

function groupAttributes(tenantId: number): AttributeMap {
  return {
    id: scalar('id', sql`d.id`),
    externalid: scalar('string', sql`d.external_id`, true),
    displayname: scalar('string', sql`d.name`),
    'meta.created': scalar('datetime', sql`d.created_at`),
    'meta.lastmodified': scalar('datetime', sql`d.updated_at`),
    members: {
      kind: 'multi',
      main: 'value',
      sub: { value: scalar('id', sql`du.user_id`), type: scalar('string', sql`'User'::text`) },
      exists: (condition) =>
        sql<boolean>`exists (select 1 from department_users du where du.tenant_id = ${tenantId} and du.department_id = d.id and ${condition})`,
    },
  }
}

/** The tenant's departments, SCIM's Groups (alias `d`). */
const selectGroups = (db: Db, tenantId: number) => db.selectFrom('departments as d').where('d.tenant_id', '=', tenantId)

export const findGroup = (db: Db, tenantId: number, id: number) =>
  selectGroups(db, tenantId)
    .select([...GROUP_COLUMNS, versionColumn('d')])
    .where('d.id', '=', id)
    .executeTakeFirst()

/** The members of some departments with their names, by user id, in one statement. */
export const membersOfGroups = (db: Db, tenantId: number, ids: number[]) =>
  db
    .selectFrom('department_users as du')
    .innerJoin('users as u', (join) => join.onRef('u.tenant_id', '=', 'du.tenant_id').onRef('u.id', '=', 'du.user_id'))
    .select(['du.department_id', 'du.user_id', 'u.first_name', 'u.last_name', 'u.username'])
    .where('du.tenant_id', '=', tenantId)
    .where('du.department_id', 'in', ids)
    .orderBy('du.user_id')
    .execute()

/** A SCIM filter on groups as SQL (400 invalidFilter when it is none). */
export const groupsFilter = (tenantId: number, filter: string) =>
  filterToSql(filter, { attributes: groupAttributes(tenantId), coreSchema: CORE_GROUP })

/** GET /Groups: the departments the filter keeps, one page of them and their total. */
export async function scimGroupsPage(
  db: Db,
  tenantId: number,
  filter: RawBuilder<boolean> | undefined,
  page: ListPage,
) {
  return filteredPage(
    selectGroups(db, tenantId),
    filter,
    (where) => where.select([...GROUP_COLUMNS, versionColumn('d')]),
    'd.id',
    page,
  )
}
