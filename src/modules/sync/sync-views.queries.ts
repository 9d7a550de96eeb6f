import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'

// Client views as rows (decision 0024, 4): a device's views since a snapshot form a chain (named by the
// snapshot's view id); `sync_view_items` holds one row per id a view of the chain held, from the view
// that added it (`added_in`) to the one that removed it (`removed_in`, null while held). View ids come
// from one sequence and a chain's views are written one at a time (row locks), so they order its history.

/** A client view: entity → the ids the client holds. */
export type ViewItems = Record<string, string[]>

/** Entity and id pairs, as two arrays for `unnest` (one parameter each, whatever their number). */
export interface ItemPairs {
  entities: string[]
  ids: string[]
}

export const noPairs = (): ItemPairs => ({ entities: [], ids: [] })

/** The rows of chain `i` held at view `view` (the view's own id). */
const heldAt = (view: number | RawBuilder<unknown>) =>
  sql`i.added_in <= ${view} and (i.removed_in is null or i.removed_in > ${view})`

const toItems = (rows: Array<{ entity: string | null; entity_id: string | null }>): ViewItems => {
  const items: ViewItems = {}
  for (const row of rows) if (row.entity !== null) (items[row.entity] ??= []).push(row.entity_id!)
  return items
}

/**
 * What the view a cursor names holds, if the device still keeps it: every id, or only those of `among`
 * (the changed records) and the entities `keys` (how sources were presented): primary-key probes, the
 * chain's other rows are not read. A view kept but empty is `{}`, a view gone undefined.
 */
export async function findView(
  db: Db,
  tenantId: number,
  owner: { userId: number; device: string },
  viewId: number,
  only?: { among: ItemPairs; keys: string[] },
): Promise<ViewItems | undefined> {
  // per id a probe of the primary key: `offset 0` keeps each subquery apart (not a join the planner may
  // turn into a scan of the chain while a freshly written chain has no statistics)
  const items = only
    ? sql`select c.entity, c.id as entity_id from unnest(${only.among.entities}::text[], ${only.among.ids}::text[]) c(entity, id)
          where exists (select 1 from sync_view_items i where i.tenant_id = ${tenantId} and i.chain = v.chain
            and i.entity = c.entity and i.entity_id = c.id and ${heldAt(sql`v.id`)} offset 0)
        union all
        select k.entity, p.entity_id from unnest(${only.keys}::text[]) k(entity)
          cross join lateral (select i.entity_id from sync_view_items i where i.tenant_id = ${tenantId}
            and i.chain = v.chain and i.entity = k.entity and ${heldAt(sql`v.id`)} offset 0) p`
    : sql`select i.entity, i.entity_id from sync_view_items i
          where i.tenant_id = ${tenantId} and i.chain = v.chain and ${heldAt(sql`v.id`)}`
  // a left join: one row of nulls for a kept empty view, none for a view gone
  const { rows } = await sql<{ entity: string | null; entity_id: string | null }>`
    select x.entity, x.entity_id from sync_views v left join lateral (${items}) x on true
    where v.tenant_id = ${tenantId} and v.id = ${viewId} and v.user_id = ${owner.userId} and v.device = ${owner.device}`.execute(
    db,
  )
  return rows.length === 0 ? undefined : toItems(rows)
}

/** Starts a chain with a snapshot's view: every id the client was given. Returns the view's id. */
export async function insertSnapshotView(
  trx: Db,
  tenantId: number,
  owner: { userId: number; device: string },
  version: number,
  items: ItemPairs,
  keep: number,
): Promise<number> {
  const { rows } = await sql<{ id: string }>`insert into sync_views (tenant_id, id, chain, user_id, device, version)
    select ${tenantId}, n.id, n.id, ${owner.userId}, ${owner.device}, ${version}
    from (select nextval('global_id_seq') as id) n returning id`.execute(trx)
  const view = Number(rows[0]!.id)
  // bounded statements: a view of 255,000 ids is a few of them
  for (let from = 0; from < items.ids.length; from += INSERT_BATCH) {
    await sql`insert into sync_view_items (tenant_id, chain, entity, entity_id, added_in)
      select distinct ${tenantId}::bigint, ${view}::bigint, c.entity, c.id, ${view}::bigint
      from unnest(${items.entities.slice(from, from + INSERT_BATCH)}::text[], ${items.ids.slice(from, from + INSERT_BATCH)}::text[]) c(entity, id)
      on conflict do nothing`.execute(trx)
  }
  await pruneDevice(trx, tenantId, owner, keep)
  return view
}

const INSERT_BATCH = 20_000

/**
 * Stores the view that follows `base` in its chain: the base's ids without `lost`, with `added`, at
 * `version`. Only the difference is written: removed rows get `removed_in`, added ids a row each. When
 * the chain moved on since the base (a client retrying with an older cursor), the new view is written
 * as its difference from the chain's newest view (the whole chain is compared: rare). Returns the new
 * view's id, or undefined when the base view is no longer kept.
 */
export async function insertNextView(
  trx: Db,
  tenantId: number,
  owner: { userId: number; device: string },
  base: { view: number; chain: number },
  change: { version: number; lost: ItemPairs; added: ItemPairs },
  keep: number,
): Promise<number | undefined> {
  const { chain } = base
  // one writer per chain at a time; then a fresh statement sees the views committed while waiting
  await sql`select id from sync_views where tenant_id = ${tenantId} and chain = ${chain} for update`.execute(trx)
  const { rows: heads } = await sql<{ head: string | null; kept: boolean | null }>`
    select max(id) as head, bool_or(id = ${base.view}) as kept from sync_views
    where tenant_id = ${tenantId} and chain = ${chain}`.execute(trx)
  if (!heads[0]?.kept) return undefined
  const atHead = Number(heads[0].head) === base.view
  const { rows } = await sql<{ id: string }>`insert into sync_views (tenant_id, chain, user_id, device, version)
    values (${tenantId}, ${chain}, ${owner.userId}, ${owner.device}, ${change.version}) returning id`.execute(trx)
  const view = Number(rows[0]!.id)
  const lost = sql`(select c.entity, c.id from unnest(${change.lost.entities}::text[], ${change.lost.ids}::text[]) c(entity, id))`
  const added = sql`(select c.entity, c.id from unnest(${change.added.entities}::text[], ${change.added.ids}::text[]) c(entity, id))`
  const heldAtBase = (entity: RawBuilder<unknown>, id: RawBuilder<unknown>) =>
    sql`exists (select 1 from sync_view_items i where i.tenant_id = ${tenantId} and i.chain = ${chain}
      and i.entity = ${entity} and i.entity_id = ${id} and ${heldAt(base.view)})`
  await sql`update sync_view_items h set removed_in = ${view}
    where h.tenant_id = ${tenantId} and h.chain = ${chain} and h.removed_in is null and h.added_in < ${view}
      and ((h.entity, h.entity_id) in ${lost}
        ${atHead ? sql`` : sql`or ((h.entity, h.entity_id) not in ${added} and not ${heldAtBase(sql`h.entity`, sql`h.entity_id`)})`})`.execute(
    trx,
  )
  const wanted = atHead
    ? added
    : sql`(select i.entity, i.entity_id from sync_view_items i
          where i.tenant_id = ${tenantId} and i.chain = ${chain} and ${heldAt(base.view)}
        except select * from ${lost} l
        union select * from ${added} a)`
  await sql`insert into sync_view_items (tenant_id, chain, entity, entity_id, added_in)
    select distinct ${tenantId}::bigint, ${chain}::bigint, w.entity, w.id, ${view}::bigint from ${wanted} w(entity, id)
    where not exists (select 1 from sync_view_items h where h.tenant_id = ${tenantId} and h.chain = ${chain}
      and h.entity = w.entity and h.entity_id = w.id and h.removed_in is null)`.execute(trx)
  await pruneDevice(trx, tenantId, owner, keep)
  return view
}

/** Keeps the device's newest `keep` views (older cursors answer 410) and only the rows they hold. */
async function pruneDevice(trx: Db, tenantId: number, owner: { userId: number; device: string }, keep: number) {
  const { rows } = await sql<{ chain: string }>`delete from sync_views
    where tenant_id = ${tenantId} and user_id = ${owner.userId} and device = ${owner.device}
      and id < (select v.id from sync_views v where v.tenant_id = ${tenantId} and v.user_id = ${owner.userId}
        and v.device = ${owner.device} order by v.id desc offset ${keep - 1} limit 1)
    returning chain`.execute(trx)
  await pruneChains(trx, tenantId, [...new Set(rows.map((row) => Number(row.chain)))])
}

/**
 * After views of these chains were deleted: drops the rows no remaining view holds (removed in or
 * before a chain's oldest view left, through the index of removed rows), and the chains left without
 * views whole.
 */
export async function pruneChains(trx: Db, tenantId: number, chains: number[]): Promise<void> {
  if (chains.length === 0) return
  const { rows } = await sql<{ chain: string; oldest: string }>`select chain, min(id) as oldest from sync_views
    where tenant_id = ${tenantId} and chain = any(${chains}::bigint[]) group by chain`.execute(trx)
  const oldest = new Map(rows.map((row) => [Number(row.chain), Number(row.oldest)]))
  const dead = chains.filter((chain) => !oldest.has(chain))
  if (dead.length > 0)
    await sql`delete from sync_view_items where tenant_id = ${tenantId} and chain = any(${dead}::bigint[])`.execute(trx)
  if (oldest.size > 0)
    await sql`delete from sync_view_items i
      using unnest(${[...oldest.keys()]}::bigint[], ${[...oldest.values()]}::bigint[]) k(chain, oldest)
      where i.tenant_id = ${tenantId} and i.chain = k.chain and i.removed_in is not null
        and i.removed_in <= k.oldest`.execute(trx)
}

/** Erasure of a user: the rows of their devices' views (the views themselves go by `user_id`). */
export async function deleteViewItemsOf(db: Db, tenantId: number, userId: number): Promise<void> {
  await sql`delete from sync_view_items i where i.tenant_id = ${tenantId} and i.chain in (
    select v.chain from sync_views v where v.tenant_id = ${tenantId} and v.user_id = ${userId})`.execute(db)
}
