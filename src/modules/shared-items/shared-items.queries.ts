import { randomUUID } from 'node:crypto'
import { type Expression, type RawBuilder, sql, type SqlBool } from 'kysely'
import { grantAllows } from '../../platform/access/access-rule.js'
import { type Actor, actorColumns } from '../../platform/auth/actor.js'
import { type CommonTableExpression, insertedRows } from '../../platform/db/database.js'
import { eventWritesSql } from '../../platform/events/domain-events.js'
import { syncChangeCtes } from '../../platform/sync/change-log.js'
import { freshGrantsWrite } from '../entity-permissions/index.js'
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

/** A condition that always holds (an insert with nothing to check). */
export const always = () => sql<boolean>`true`

/** SQL: the actor may view the shared item `si` (contract 30: not soft-deleted, `view` grants admit them). */
export function viewableSql(actor: Actor): Expression<SqlBool> {
  return sql<boolean>`(si.deleted_at is null and ${grantAllows(actor, 'view', 'sharedItem', sql.ref('si.id'))})` as Expression<SqlBool>
}

/**
 * SQL: the actor administrates `si`: `all` → every item, `none` → none, `granted` → the items whose
 * `administrate` grants admit the actor (unrestricted items included). shared-items.access.ts decides which.
 */
export function administrableSql(actor: Actor, scope: 'all' | 'granted' | 'none'): Expression<SqlBool> {
  if (scope === 'all') return sql<boolean>`true` as Expression<SqlBool>
  if (scope === 'none') return sql<boolean>`false` as Expression<SqlBool>
  return grantAllows(actor, 'administrate', 'sharedItem', sql.ref('si.id')) as Expression<SqlBool>
}

/** The ids of the shared items the actor may view, of `ids` only when given. */
export async function selectViewableIds(db: Db, actor: Actor, ids?: string[]): Promise<string[]> {
  const only = ids ? sql`and si.id = any(${ids}::uuid[])` : sql``
  const { rows } = await sql<{ id: string }>`select si.id from shared_items si
    where si.tenant_id = ${actor.tenantId} ${only} and ${viewableSql(actor)}`.execute(db)
  return rows.map((row) => row.id)
}

/** Which of these ids name shared items that are not soft-deleted. */
export async function selectLiveIds(db: Db, tenantId: number, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const { rows } = await sql<{ id: string }>`select id from shared_items
    where tenant_id = ${tenantId} and id = any(${ids}::uuid[]) and deleted_at is null`.execute(db)
  return new Set(rows.map((row) => row.id))
}

/** Whether the actor may view one shared item. */
export async function isViewableSharedItem(db: Db, actor: Actor, id: string): Promise<boolean> {
  const { rows } =
    await sql`select 1 from shared_items si where si.tenant_id = ${actor.tenantId} and si.id = ${id}::uuid
      and ${viewableSql(actor)}`.execute(db)
  return rows.length > 0
}

/** The stored target id of `si`, as the target's join reads it. */
export const targetableIdRef = () => sql.ref('si.targetable_id')

/**
 * The create of a shared item as one statement: the item, its fresh grants, its events' writes and its
 * change record for offline clients (issue 43; the caller wakes the long polls), written only if `viewable` (the
 * actor may share the target), every grantee exists and no event subscriber has to run in a transaction.
 */
export function insertSharedItemWithRiders(
  db: Db,
  tenantId: number,
  item: SharedItemInsert,
  viewable: RawBuilder<boolean>,
  grants: Parameters<typeof freshGrantsWrite>[1] | undefined,
  events: Parameters<typeof eventWritesSql>[1],
) {
  const written = sql<boolean>`exists (select from inserted)`
  const grantsWrite = grants && freshGrantsWrite(tenantId, grants)
  const eventWrites = eventWritesSql(tenantId, events, written)
  const onlyIf = sql<boolean>`${viewable} and ${grantsWrite?.granteesExist ?? sql`true`} and ${eventWrites.unheeded}`
  const alongside: CommonTableExpression[] = [
    ...(grantsWrite ? [['granted', grantsWrite.insert(written)] as CommonTableExpression] : []),
    ...eventWrites.ctes,
    // the item's change record, read by everyone (null user); the long polls are woken once committed
    ['sync_items', sql`select i.id, null::bigint as user_id from inserted i`],
    ...syncChangeCtes(tenantId, 'sharedItem', 'sync_items'),
  ]
  return insertSharedItem(db, tenantId, item, onlyIf, alongside)
}

/** The access log of one shared item (alias `sa`). */
export const selectAccessesOf = (db: Db, tenantId: number, sharedItemId: string) =>
  db
    .selectFrom('shared_item_accesses as sa')
    .where('sa.tenant_id', '=', tenantId)
    .where('sa.shared_item_id', '=', sharedItemId)

/**
 * Inserts one tenant's access-log entries. insertedRows: on one PostgreSQL one statement text whatever
 * the batch size (prepared once per connection); on Citus a VALUES list, which it routes whole.
 */
export async function insertAccesses(
  db: Db,
  tenantId: number,
  accesses: Array<{ sharedItemId: string; userId: number | null; outcome: string; urlType: string | null }>,
): Promise<void> {
  await sql`insert into shared_item_accesses (tenant_id, shared_item_id, user_id, outcome, url_type)
    ${insertedRows({
      alias: 'a',
      leading: [sql`${tenantId}`],
      columns: [
        { name: 'shared_item_id', type: 'text', values: accesses.map((a) => a.sharedItemId) },
        { name: 'user_id', type: 'bigint', values: accesses.map((a) => a.userId) },
        { name: 'outcome', type: 'text', values: accesses.map((a) => a.outcome) },
        { name: 'url_type', type: 'text', values: accesses.map((a) => a.urlType) },
      ],
    })}`.execute(db)
}

export const findTenantIdBySlug = (db: Db, slug: string) =>
  db.selectFrom('tenants').select('id').where('slug', '=', slug).executeTakeFirst()

/**
 * A grant token's holder with their role's permissions and departments, when they still may act:
 * active, neither deleted nor blacked out, not logged out since `issuedAt` (seconds).
 */
export const findTokenHolder = (db: Db, tenantId: number, userId: number, issuedAt: number) =>
  db
    .selectFrom('users as u')
    .innerJoin('roles as r', (join) => join.onRef('r.id', '=', 'u.role_id').onRef('r.tenant_id', '=', 'u.tenant_id'))
    .select(actorColumns(tenantId))
    .where('u.tenant_id', '=', tenantId)
    .where('u.id', '=', userId)
    .where('u.deleted_at', 'is', null)
    .where('u.blacked_out_at', 'is', null)
    .where('u.active', '=', true)
    .where(sql<boolean>`(u.logout_requested_at is null or u.logout_requested_at < to_timestamp(${issuedAt}))`)
    .executeTakeFirst()

/** Whether a shared item still hands out grant tokens for that target and `holder` may view it. */
export async function sharedItemAdmitsToken(
  db: Db,
  holder: Actor,
  sharedItemId: string,
  redirectType: string,
  alias: string,
  storedId: string,
): Promise<boolean> {
  const row = await db
    .selectFrom('shared_items as si')
    .select('si.id')
    .where('si.tenant_id', '=', holder.tenantId)
    .where('si.id', '=', sharedItemId)
    .where('si.deleted_at', 'is', null)
    .where('si.redirect_type', '=', redirectType)
    .where('si.targetable_type', '=', alias)
    .where('si.targetable_id', '=', storedId)
    .where(grantAllows(holder, 'view', 'sharedItem', sql.ref('si.id')))
    .executeTakeFirst()
  return row !== undefined
}
