import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import { insertedRows } from '../../platform/db/database.js'

export const selectDepartments = (db: Db, tenantId: number) =>
  db.selectFrom('departments as d').where('d.tenant_id', '=', tenantId)

export function insertDepartment(
  db: Db,
  tenantId: number,
  values: {
    name: string
    folder_id?: number | null
    notification_setting_id?: number | null
    external_id?: string | null
  },
) {
  return db
    .insertInto('departments')
    .values({
      tenant_id: tenantId,
      name: values.name,
      folder_id: values.folder_id ?? null,
      notification_setting_id: values.notification_setting_id ?? null,
      external_id: values.external_id ?? null,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
}

export function updateDepartment(
  db: Db,
  tenantId: number,
  id: number,
  values: {
    name?: string
    folder_id?: number | null
    notification_setting_id?: number | null
    external_id?: string | null
  },
) {
  return db
    .updateTable('departments')
    .set({ ...values, updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst()
}

/** The stored department, locked for the update (the audit record's "before"); undefined when the tenant has none such. */
export function findDepartmentForUpdate(db: Db, tenantId: number, id: number) {
  return db
    .selectFrom('departments')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst()
}

/** The department's members' user ids, ascending (its membership before a replacement or deletion). */
export async function memberIds(db: Db, tenantId: number, departmentId: number): Promise<number[]> {
  const rows = await db
    .selectFrom('department_users')
    .select('user_id')
    .where('tenant_id', '=', tenantId)
    .where('department_id', '=', departmentId)
    .orderBy('user_id')
    .execute()
  return rows.map((m) => Number(m.user_id))
}

export function deleteDepartment(db: Db, tenantId: number, id: number) {
  return db
    .deleteFrom('departments')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst()
}

/** Replaces the department's members with `userIds` (set-based). */
export async function replaceMembers(db: Db, tenantId: number, departmentId: number, userIds: number[]): Promise<void> {
  await db
    .deleteFrom('department_users')
    .where('tenant_id', '=', tenantId)
    .where('department_id', '=', departmentId)
    .where((eb) => (userIds.length > 0 ? eb('user_id', 'not in', userIds) : eb.val(true)))
    .execute()
  if (userIds.length === 0) return
  await sql`insert into department_users (tenant_id, department_id, user_id)
    ${insertedRows({
      alias: 'm',
      leading: [sql`${tenantId}`, sql`${departmentId}`],
      columns: [{ name: 'user_id', type: 'bigint', values: userIds }],
    })}
    on conflict do nothing`.execute(db)
}

/** The ids among `userIds` that are no user of the tenant. */
export async function missingUserIds(db: Db, tenantId: number, userIds: number[]): Promise<number[]> {
  if (userIds.length === 0) return []
  const { rows } = await sql<{ id: number }>`select x.id from unnest(${userIds}::bigint[]) as x(id)
    where not exists (select 1 from users u where u.tenant_id = ${tenantId} and u.id = x.id)`.execute(db)
  return rows.map((r) => Number(r.id))
}
