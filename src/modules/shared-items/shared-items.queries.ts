import { randomUUID } from 'node:crypto'
import { type RawBuilder, sql } from 'kysely'
import type { CommonTableExpression } from '../../platform/db/database.js'
import type { Db } from '../../platform/db/schema.js'

export interface SharedItemRow {
  id: string
  user_id: number | null
  type: string
  redirect_type: string
  targetable_type: string
  targetable_id: string
  config: Record<string, unknown>
  deleted_at: string | null
}

const columns = [
  'si.id',
  'si.user_id',
  'si.type',
  'si.redirect_type',
  'si.targetable_type',
  'si.targetable_id',
  'si.config',
  'si.deleted_at',
] as const

/** The tenant's shared items as `si` (callers add the access rule and query conventions). */
export function selectSharedItems(db: Db, tenantId: number) {
  return db.selectFrom('shared_items as si').where('si.tenant_id', '=', tenantId)
}

export async function findSharedItem(
  db: Db,
  tenantId: number,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<SharedItemRow | undefined> {
  let query = selectSharedItems(db, tenantId).select(columns).where('si.id', '=', id)
  if (options.forUpdate) query = query.forUpdate()
  return query.executeTakeFirst()
}

export interface SharedItemValues {
  user_id: number
  type: string
  redirect_type: string
  targetable_type: string
  targetable_id: string
  config: Record<string, unknown>
}

/** A new row's values as `insertSharedItem` takes them: the config as JSON text, the id when chosen beforehand. */
export type SharedItemInsert = Omit<SharedItemValues, 'config'> & { id?: string; config: string }

export const sharedItemInsert = (values: SharedItemValues, id?: string): SharedItemInsert => ({
  ...values,
  id,
  config: JSON.stringify(values.config),
})

/**
 * Inserts a shared item if `onlyIf` holds (in the same statement): a select of the new row as `si`
 * over the insert, so that it is presented by that statement too (no row: nothing was inserted).
 * `alongside`: further writes of the statement (common table expressions that may read `inserted`).
 * The values may be a `shapedStatement`'s stand-ins.
 */
export function insertSharedItem(
  db: Db,
  tenantId: number,
  values: SharedItemInsert,
  onlyIf: RawBuilder<boolean>,
  alongside: CommonTableExpression[] = [],
) {
  const inserted = db.with('inserted', (qc) =>
    qc
      .insertInto('shared_items')
      .columns(['id', 'tenant_id', 'user_id', 'type', 'redirect_type', 'targetable_type', 'targetable_id', 'config'])
      .expression(
        sql`select coalesce(${values.id ?? null}::uuid, gen_random_uuid()), ${tenantId}::bigint, ${values.user_id}::bigint, ${values.type}::text,
      ${values.redirect_type}::text, ${values.targetable_type}::text, ${values.targetable_id}::text, ${values.config}::jsonb where ${onlyIf}`,
      )
      .returningAll(),
  )
  const withAlongside = alongside.reduce(
    (query, [name, write]) =>
      // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- the extra writes' rows are never read: typed as the item's statement
      query.with(name, () => sql`(${write})`) as unknown as typeof inserted,
    inserted,
  )
  return withAlongside.selectFrom('inserted as si')
}

/** Inserts a shared item (a plain insert … values: routed whole to the tenant's worker on Citus). */
export async function insertSharedItemRow(db: Db, tenantId: number, values: SharedItemInsert): Promise<void> {
  await db
    .insertInto('shared_items')
    .values({ ...values, id: values.id ?? randomUUID(), tenant_id: tenantId })
    .execute()
}

export async function updateSharedItem(
  db: Db,
  tenantId: number,
  id: string,
  changes: Partial<Pick<SharedItemValues, 'redirect_type' | 'targetable_type' | 'targetable_id' | 'config'>>,
): Promise<void> {
  const { config, ...rest } = changes
  await db
    .updateTable('shared_items')
    .set({
      ...rest,
      ...(config !== undefined ? { config: JSON.stringify(config) } : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute()
}

/** Sets or clears `deleted_at`; the new `deleted_at` (null when restored), or false when nothing changed. */
export async function setSharedItemDeleted(
  db: Db,
  tenantId: number,
  id: string,
  deleted: boolean,
): Promise<string | null | false> {
  const row = await db
    .updateTable('shared_items')
    .set({ deleted_at: deleted ? sql<Date>`now()` : null, updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('deleted_at', deleted ? 'is' : 'is not', null)
    .returning('deleted_at')
    .executeTakeFirst()
  return row ? (row.deleted_at as string | null) : false
}

/** Basic fields of shared items (the `targetEntity` relation of grants). */
export async function selectBasicSharedItems(db: Db, tenantId: number, ids: string[]) {
  return selectSharedItems(db, tenantId)
    .select([
      'si.id',
      'si.user_id',
      'si.type',
      'si.redirect_type',
      'si.targetable_type',
      'si.targetable_id',
      'si.created_at',
      'si.updated_at',
      'si.deleted_at',
    ])
    .where('si.id', 'in', ids)
    .execute()
}
