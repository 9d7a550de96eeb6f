import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import type { CreateRoleBody, UpdateRoleBody } from './roles.schemas.js'

export const selectRoles = (db: Db, tenantId: number) => db.selectFrom('roles as r').where('r.tenant_id', '=', tenantId)

export function insertRole(db: Db, tenantId: number, body: CreateRoleBody) {
  return db
    .insertInto('roles')
    .values({
      tenant_id: tenantId,
      name: body.name,
      permissions: body.permissions,
      active: body.active ?? true,
      requires_mfa: body.requires_mfa ?? false,
      folder_id: body.folder_id ?? null,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
}

export function updateRole(db: Db, tenantId: number, id: number, body: UpdateRoleBody) {
  return db
    .updateTable('roles')
    .set({ ...body, updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst()
}

export function deleteRole(db: Db, tenantId: number, id: number) {
  return db
    .deleteFrom('roles')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst()
}

export async function roleHasUsers(db: Db, tenantId: number, id: number): Promise<boolean> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('role_id', '=', id)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/** The stored role, locked for the update (the audit record's "before"); undefined when the tenant has none such. */
export function findRoleForUpdate(db: Db, tenantId: number, id: number) {
  return db
    .selectFrom('roles')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst()
}
