import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import { conditionReadFirst, insertedRows } from '../../platform/db/database.js'
import type { PermissionEntity } from './entity-permissions.schemas.js'

export const grantColumns = [
  'id',
  'key',
  'permission_entity',
  'permission_entity_id',
  'target_entity',
  'target_entity_id',
  'created_at',
  'updated_at',
] as const

export interface GrantRow {
  id: number
  key: string
  permission_entity: PermissionEntity
  permission_entity_id: number
  target_entity: string
  target_entity_id: string
  created_at: string
  updated_at: string
}

export interface GrantValues {
  key: string
  permission_entity: PermissionEntity
  permission_entity_id: number
  target_entity: string
  target_entity_id: string
}

/** The tenant's grants, aliased `ep` (the base of list and show queries). */
export const selectGrants = (db: Db, tenantId: number) =>
  db.selectFrom('entity_permissions as ep').where('ep.tenant_id', '=', tenantId)

export function findGrant(db: Db, tenantId: number, id: number): Promise<GrantRow | undefined> {
  return db
    .selectFrom('entity_permissions')
    .select(grantColumns)
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst()
}

/** Grants on one or more targets of one alias, in id order. */
export function selectGrantsOnTargets(
  db: Db,
  tenantId: number,
  alias: string,
  targetIds: string[],
): Promise<GrantRow[]> {
  if (targetIds.length === 0) return Promise.resolve([])
  return db
    .selectFrom('entity_permissions')
    .select(grantColumns)
    .where('tenant_id', '=', tenantId)
    .where('target_entity', '=', alias)
    .where('target_entity_id', 'in', targetIds)
    .orderBy('id')
    .execute()
}

/** Inserts a grant unless the identical one exists (on the table's unique constraint); the new row or undefined. */
export async function insertGrantIfAbsent(
  db: Db,
  tenantId: number,
  values: GrantValues,
): Promise<GrantRow | undefined> {
  return (await insertGrantsIfAbsent(db, tenantId, [values]))[0]
}

/**
 * Inserts grants in one statement (`insertedRows`), skipping those that exist (the unique key); with
 * `existingGranteesOnly`, also those whose grantee does not exist (`granteeExists`; on Citus read
 * first, `conditionReadFirst`). The inserted rows, by id.
 */
export async function insertGrantsIfAbsent(
  db: Db,
  tenantId: number,
  values: GrantValues[],
  options: { existingGranteesOnly?: boolean } = {},
): Promise<GrantRow[]> {
  if (values.length === 0) return []
  const column = <K extends keyof GrantValues>(name: K) => values.map((v) => v[name])
  const grantee = options.existingGranteesOnly
    ? granteeExists(tenantId, sql.ref('g.permission_entity'), sql.ref('g.permission_entity_id'))
    : undefined
  const inserted = await conditionReadFirst(db, {
    alias: 'g',
    leading: [sql`${tenantId}::bigint`],
    columns: [
      { name: 'key', type: 'text', values: column('key') },
      { name: 'permission_entity', type: 'text', values: column('permission_entity') },
      { name: 'permission_entity_id', type: 'bigint', values: column('permission_entity_id') },
      { name: 'target_entity', type: 'text', values: column('target_entity') },
      { name: 'target_entity_id', type: 'text', values: column('target_entity_id') },
    ],
    onlyIf: grantee,
  })
  if (!inserted) return []
  const rows = await db
    .insertInto('entity_permissions')
    .columns(['tenant_id', 'key', 'permission_entity', 'permission_entity_id', 'target_entity', 'target_entity_id'])
    .expression(insertedRows(inserted))
    .onConflict((oc) =>
      oc
        .columns(['tenant_id', 'target_entity', 'target_entity_id', 'key', 'permission_entity', 'permission_entity_id'])
        .doNothing(),
    )
    .returning(grantColumns)
    .execute()
  return rows.sort((a, b) => a.id - b.id)
}

/** Grants as `freshGrantsWrite` takes them: one array per column. */
export interface GrantColumns {
  id: number[]
  key: string[]
  permission_entity: string[]
  permission_entity_id: number[]
  target_entity: string[]
  target_entity_id: string[]
  created_at: string[]
}

export function freshGrantColumns(grants: GrantRow[]): GrantColumns {
  return {
    id: grants.map((g) => g.id),
    key: grants.map((g) => g.key),
    permission_entity: grants.map((g) => g.permission_entity),
    permission_entity_id: grants.map((g) => g.permission_entity_id),
    target_entity: grants.map((g) => g.target_entity),
    target_entity_id: grants.map((g) => g.target_entity_id),
    created_at: grants.map((g) => g.created_at),
  }
}

/**
 * Grants whose ids and timestamps are known beforehand, as parts of a caller's single statement (a
 * target created in the same statement): `insert` runs when `onlyIf` holds, and `granteesExist`
 * holds when every grantee exists (`granteeExists`). Timestamps are `YYYY-MM-DD HH:MM:SS` in UTC.
 * The columns may be a `shapedStatement`'s stand-ins.
 */
export function freshGrantsWrite(tenantId: number, columns: GrantColumns) {
  const rows = sql`unnest(${columns.id}::bigint[], ${columns.key}::text[], ${columns.permission_entity}::text[], ${columns.permission_entity_id}::bigint[],
    ${columns.target_entity}::text[], ${columns.target_entity_id}::text[], ${columns.created_at}::text[])
    as g(id, key, permission_entity, permission_entity_id, target_entity, target_entity_id, created_at)`
  return {
    insert: (onlyIf: RawBuilder<boolean>) => sql`insert into entity_permissions
      (id, tenant_id, key, permission_entity, permission_entity_id, target_entity, target_entity_id, created_at, updated_at)
      select g.id, ${tenantId}::bigint, g.key, g.permission_entity, g.permission_entity_id, g.target_entity, g.target_entity_id,
        (g.created_at || '+00')::timestamptz, (g.created_at || '+00')::timestamptz
      from ${rows} where ${onlyIf}`,
    granteesExist: sql<boolean>`not exists (select from ${rows} where not ${granteeExists(tenantId, sql.ref('g.permission_entity'), sql.ref('g.permission_entity_id'))})`,
  }
}

/** `selectGrants` narrowed to the grant identical to `values` (the unique key). */
export function selectIdenticalGrant(db: Db, tenantId: number, values: GrantValues) {
  return selectGrants(db, tenantId)
    .where('ep.target_entity', '=', values.target_entity)
    .where('ep.target_entity_id', '=', values.target_entity_id)
    .where('ep.key', '=', values.key)
    .where('ep.permission_entity', '=', values.permission_entity)
    .where('ep.permission_entity_id', '=', values.permission_entity_id)
}

export function findIdenticalGrant(db: Db, tenantId: number, values: GrantValues): Promise<GrantRow | undefined> {
  return selectIdenticalGrant(db, tenantId, values)
    .select(grantColumns.map((column) => `ep.${column}` as const))
    .executeTakeFirst() as Promise<GrantRow | undefined>
}

export function deleteGrants(db: Db, tenantId: number, ids: number[]): Promise<GrantRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db
    .deleteFrom('entity_permissions')
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', ids)
    .returning(grantColumns)
    .execute()
}

export function deleteGrantsOnTargets(
  db: Db,
  tenantId: number,
  alias: string,
  targetIds: string[],
): Promise<GrantRow[]> {
  if (targetIds.length === 0) return Promise.resolve([])
  return db
    .deleteFrom('entity_permissions')
    .where('tenant_id', '=', tenantId)
    .where('target_entity', '=', alias)
    .where('target_entity_id', '=', sql<string>`any(${targetIds}::text[])`)
    .returning(grantColumns)
    .execute()
}

/** SQL: the grantee (`entity`, `id`) exists in the tenant and may receive grants (a blacked-out user may not). */
function granteeExists(tenantId: number, entity: RawBuilder<unknown>, id: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`case ${entity}
    when 'user' then exists (select 1 from users u where u.tenant_id = ${tenantId} and u.id = ${id} and u.blacked_out_at is null)
    when 'role' then exists (select 1 from roles r where r.tenant_id = ${tenantId} and r.id = ${id})
    when 'department' then exists (select 1 from departments d where d.tenant_id = ${tenantId} and d.id = ${id})
    else false end`
}

/** Which of the given principals exist in the tenant (`granteeExists`, one statement), as `entity:id` strings. */
export async function existingPrincipals(
  db: Db,
  tenantId: number,
  refs: Array<{ entity: PermissionEntity; id: number }>,
): Promise<Set<string>> {
  if (refs.length === 0) return new Set()
  const { rows } = await sql<{ entity: string; id: number }>`select p.entity, p.id
    from unnest(${refs.map((r) => r.entity)}::text[], ${refs.map((r) => r.id)}::bigint[]) as p(entity, id)
    where ${granteeExists(tenantId, sql.ref('p.entity'), sql.ref('p.id'))}`.execute(db)
  return new Set(rows.map((row) => `${row.entity}:${row.id}`))
}

/** Basic fields of roles and departments for the `permissionEntity` relation. */
export function selectBasicRoles(db: Db, tenantId: number, ids: number[]) {
  return db
    .selectFrom('roles')
    .select(['id', 'name', 'active', 'folder_id', 'created_at', 'updated_at'])
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', ids)
    .execute()
}

export function selectBasicDepartments(db: Db, tenantId: number, ids: number[]) {
  return db
    .selectFrom('departments')
    .select(['id', 'name', 'folder_id', 'created_at', 'updated_at'])
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', ids)
    .execute()
}

/** Whether a content table of a grant target (`tenant_id`, `id`) holds the record. */
export async function contentRecordExists(
  db: Db,
  table: string,
  tenantId: number,
  id: string | number,
): Promise<boolean> {
  const { rows } = await sql`select 1 from ${sql.table(table)} where tenant_id = ${tenantId} and id = ${id}`.execute(db)
  return rows.length > 0
}

/** Some columns of a content table's records, by id (ids are uuids or bigints). */
export async function contentRecordColumns(
  db: Db,
  table: string,
  columns: readonly string[],
  idType: 'integer' | 'uuid',
  tenantId: number,
  ids: ReadonlyArray<string | number>,
): Promise<Record<string, unknown>[]> {
  const { rows } = await sql<Record<string, unknown>>`
    select ${sql.join(columns.map((c) => sql.ref(c)))} from ${sql.table(table)}
    where tenant_id = ${tenantId} and id = any(${ids.map(String)}::${sql.raw(idType === 'uuid' ? 'uuid' : 'bigint')}[])`.execute(
    db,
  )
  return rows
}

/** How many `view` grants one target carries (after the caller's changes in its transaction). */
export async function countViewGrantsOnTarget(db: Db, tenantId: number, entity: string, id: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from entity_permissions
    where tenant_id = ${tenantId} and target_entity = ${entity} and target_entity_id = ${id}
      and key = 'view'`.execute(db)
  return Number(rows[0]?.n ?? 0)
}
