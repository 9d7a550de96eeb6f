import { sql } from 'kysely'
import { grantAllows } from '../../platform/access/access-rule.js'
import type { Actor } from '../../platform/auth/actor.js'
import type { Db } from '../../platform/db/schema.js'

/** A user (not deleted) with their role's permissions and their departments: what authentication builds an actor from. */
export const findPrincipalRow = (db: Db, tenantId: number, userId: number) =>
  db
    .selectFrom('users as u')
    .innerJoin('roles as r', (j) => j.onRef('r.tenant_id', '=', 'u.tenant_id').onRef('r.id', '=', 'u.role_id'))
    .select(['u.id', 'u.role_id', 'r.permissions', 'u.lang_id'])
    .select(
      sql<
        Array<number | string>
      >`array(select du.department_id from department_users du where du.tenant_id = ${tenantId} and du.user_id = u.id)`.as(
        'department_ids',
      ),
    )
    .where('u.tenant_id', '=', tenantId)
    .where('u.id', '=', userId)
    .where('u.deleted_at', 'is', null)
    .executeTakeFirst()

/** The `key` grants on some records of one target kind, by id. */
export const grantsOn = (db: Db, tenantId: number, key: string, target: string, ids: string[]) =>
  db
    .selectFrom('entity_permissions as ep')
    .select([
      'ep.id',
      'ep.target_entity',
      'ep.target_entity_id',
      'ep.key',
      'ep.permission_entity',
      'ep.permission_entity_id',
    ])
    .where('ep.tenant_id', '=', tenantId)
    .where('ep.target_entity', '=', target)
    .where('ep.target_entity_id', 'in', ids)
    .where('ep.key', '=', key)
    .orderBy('ep.id')
    .execute()

/** The access rule (`grantAllows`) on each link's own view grants, in one statement. */
export async function linksAllow(
  db: Db,
  principal: Actor,
  links: Array<{ target_entity: string; target_entity_id: string }>,
): Promise<boolean[]> {
  if (links.length === 0) return []
  const { rows } = await sql<Record<string, boolean>>`select ${sql.join(
    links.map(
      (link, i) =>
        sql`${grantAllows(principal, 'view', link.target_entity, sql`${link.target_entity_id}`)} as ${sql.id(`l${i}`)}`,
    ),
  )}`.execute(db)
  return links.map((_link, i) => rows[0]![`l${i}`] === true)
}

/** A folder's type and path (its ancestors and itself). */
export const findFolderPath = (db: Db, tenantId: number, folderId: number) =>
  db
    .selectFrom('folders')
    .select(['type', 'path'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', folderId)
    .executeTakeFirst()
