import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import { DEFAULT_ROLES } from '../roles/index.js'

export const insertTenant = (db: Db, slug: string, name: string) =>
  db.insertInto('tenants').values({ slug, name }).returning(['id', 'slug']).executeTakeFirstOrThrow()

/** The default roles (platform/auth/permissions.ts) of a new tenant. */
export const insertDefaultRoles = (db: Db, tenantId: number) =>
  db
    .insertInto('roles')
    .values(DEFAULT_ROLES.map((r) => ({ tenant_id: tenantId, name: r.name, permissions: [...r.permissions] })))
    .returning(['id', 'name'])
    .execute()

export async function findTenantBySlug(db: Db, slug: string) {
  return db.selectFrom('tenants').select(['id', 'slug', 'name', 'settings']).where('slug', '=', slug).executeTakeFirst()
}

/** Deletes a tenant: every tenant-owned table cascades from tenants. */
export async function deleteTenant(db: Db, tenantId: number): Promise<void> {
  await db.deleteFrom('tenants').where('id', '=', tenantId).execute()
}

/** The demo's state in the tenant's settings (`demo: seeding` until it is complete). */
export async function markDemo(db: Db, tenantId: number, state: 'seeding' | 'complete'): Promise<void> {
  await db
    .updateTable('tenants')
    .set({ settings: sql<string>`settings || ${JSON.stringify({ demo: state })}::jsonb` })
    .where('id', '=', tenantId)
    .execute()
}

/** Every tenant's id, in order (a sweep's tenant-by-tenant pass). */
export const selectTenantIds = async (db: Db): Promise<number[]> =>
  (await db.selectFrom('tenants').select('id').orderBy('id').execute()).map(({ id }) => id)

export async function isDatabaseEmpty(db: Db): Promise<boolean> {
  const row = await db.selectFrom('tenants').select('id').limit(1).executeTakeFirst()
  return row === undefined
}

/** Departments of the given names, their ids in that order. */
export const insertDepartments = (db: Db, tenantId: number, names: string[]) =>
  db
    .insertInto('departments')
    .values(names.map((name) => ({ tenant_id: tenantId, name })))
    .returning('id')
    .execute()

export async function insertDepartmentMembers(
  db: Db,
  tenantId: number,
  members: Array<{ departmentId: number; userId: number }>,
): Promise<void> {
  await db
    .insertInto('department_users')
    .values(members.map((m) => ({ tenant_id: tenantId, department_id: m.departmentId, user_id: m.userId })))
    .execute()
}

/** The tenant's queued notification fan-out jobs with their payloads (the public jobs view has no payload column). */
export async function queuedFanOuts<Payload>(db: Db, tenantId: number) {
  const { rows } = await sql<{
    id: string
    payload: Payload
  }>`select j.id, j.payload from graphile_worker._private_jobs j
    join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'notifications:fan_out' and (j.payload->'spec'->>'tenantId')::bigint = ${tenantId} order by j.id`.execute(
    db,
  )
  return rows
}

/** Marks a job done (as the worker would). */
export async function completeJob(db: Db, jobId: string): Promise<void> {
  await sql`select graphile_worker.complete_jobs(array[${jobId}]::bigint[])`.execute(db)
}
