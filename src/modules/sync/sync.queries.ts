import type { Actor } from '../../platform/auth/actor.js'
import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import {
  OWN_STATE,
  readSyncClock,
  settleSyncClock,
  syncClockColumns,
  type SyncClockRow,
  type SyncClockState,
  syncClockState,
} from '../../platform/sync/change-log.js'

/** A client view: entity → the ids the client holds. */
export type ViewItems = Record<string, string[]>

/** The tenant's clock (0 and 0 before its first numbering), its pending change records numbered first. */
export const findSettledClock = async (db: Db, tenantId: number) =>
  settledClock(db, tenantId, await readSyncClock(db, tenantId))

/**
 * What an incremental sync needs to know before anything else, in one statement: the tenant's clock,
 * its pending change records and whether the device still keeps the cursor's client view (its ids are
 * read only when something changed: an idle sync does not read a view of thousands of ids).
 */
export async function findCursorState(
  db: Db,
  tenantId: number,
  userId: number,
  device: string,
  viewId: number,
): Promise<SyncClockState & { kept: boolean }> {
  const { rows } = await sql<SyncClockRow & { kept: boolean }>`
    select ${syncClockColumns(tenantId)},
      exists (select 1 from sync_views v where v.tenant_id = ${tenantId} and v.id = ${viewId}
        and v.user_id = ${userId} and v.device = ${device}) as kept`.execute(db)
  const row = rows[0]!
  return { ...syncClockState(row), kept: row.kept }
}

/** The clock once the pending change records it counted are numbered (`settleSyncClock`). */
export async function settledClock<T extends SyncClockState>(db: Db, tenantId: number, state: T): Promise<T> {
  if (state.pending.changes + state.pending.access === 0) return state
  const clock = await settleSyncClock(db, tenantId)
  return { ...state, ...clock, pending: { changes: 0, access: 0 } }
}

export interface ChangeRow {
  entity: string
  entity_id: string
  version: number
  deleted: boolean
}

/** `sync_changes` rows of users' own states of records (`ownStateChange`): entity `<entity>/own`, id `<id>/<user id>`. */
const ownStateRow = sql<boolean>`entity like ${`%${OWN_STATE}`}`

/**
 * The changes after `since` up to `until` the user may be concerned by (own records and own states of
 * others excluded), in version order. A change of the user's own state of a record (`ownStateChange`)
 * comes as a change of the record itself: the feed re-reads it for this user, with the new state.
 */
export async function selectChanges(
  db: Db,
  tenantId: number,
  userId: number,
  since: number,
  until: number,
  limit: number,
): Promise<ChangeRow[]> {
  const rows = await db
    .selectFrom('sync_changes')
    .select([
      sql<string>`case when ${ownStateRow} then left(entity, ${-OWN_STATE.length}::int) else entity end`.as('entity'),
      sql<string>`case when ${ownStateRow} then split_part(entity_id, '/', 1) else entity_id end`.as('entity_id'),
      'version',
      'deleted',
    ])
    .where('tenant_id', '=', tenantId)
    .where('version', '>', since)
    .where('version', '<=', until)
    .where((eb) => eb.or([eb('user_id', 'is', null), eb('user_id', '=', userId)]))
    .orderBy('version')
    .limit(limit)
    .execute()
  return rows.map((row) => ({ ...row, version: Number(row.version) }))
}

/**
 * The latest versions of some records of one entity as the user sees them: the record's change or the
 * user's own state of it (`ownStateChange`), whichever is newer (0 for a record never changed since
 * the feed began). Primary-key probes for both.
 */
export async function selectVersions(
  db: Db,
  tenantId: number,
  userId: number,
  entity: string,
  ids: string[],
): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map()
  const rows = await db
    .selectFrom('sync_changes')
    .select([
      'entity',
      'entity_id',
      // a change still pending (committed after this sync numbered the pending ones) will be numbered
      // above the clock: the version the client keeps for it until then is never ahead of the real one
      sql<string>`coalesce(version, (select c.version + 1 from sync_clocks c where c.tenant_id = ${tenantId}), 1)`.as(
        'version',
      ),
    ])
    .where('tenant_id', '=', tenantId)
    .where((eb) =>
      eb.or([
        eb.and([eb('entity', '=', entity), eb('entity_id', '=', sql<string>`any(${ids}::text[])`)]),
        eb.and([
          eb('entity', '=', `${entity}${OWN_STATE}`),
          eb('entity_id', '=', sql<string>`any(${ids.map((id) => `${id}/${userId}`)}::text[])`),
        ]),
      ]),
    )
    .execute()
  const versions = new Map<string, number>()
  for (const row of rows) {
    const id = row.entity === entity ? row.entity_id : row.entity_id.split('/')[0]!
    versions.set(id, Math.max(versions.get(id) ?? 0, Number(row.version)))
  }
  return versions
}

/**
 * Whether the user's view may have changed after `since` (up to `until`): an access change about the
 * user, their role, one of their departments or the whole tenant. One indexed read.
 */
export async function accessChangedSince(
  db: Db,
  tenantId: number,
  who: { userId: number; roleId: number; departmentIds: number[] },
  since: number,
  until: number,
): Promise<boolean> {
  const row = await db
    .selectFrom('sync_access_changes')
    .select(sql`1`.as('one'))
    .where('tenant_id', '=', tenantId)
    .where('version', '>', since)
    .where('version', '<=', until)
    .where((eb) =>
      eb.or([
        eb('scope', '=', 'tenant'),
        eb.and([eb('scope', '=', 'user'), eb('scope_id', '=', who.userId)]),
        eb.and([eb('scope', '=', 'role'), eb('scope_id', '=', who.roleId)]),
        eb.and([eb('scope', '=', 'department'), eb('scope_id', '=', sql<number>`any(${who.departmentIds}::bigint[])`)]),
      ]),
    )
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/** The client view a cursor stands for, if it is still kept and belongs to this user and device. */
export async function findView(
  db: Db,
  tenantId: number,
  userId: number,
  device: string,
  id: number,
): Promise<ViewItems | undefined> {
  // a left join: a kept view without lists (the user saw nothing) is one row of nulls, a view gone none
  const rows = await db
    .selectFrom('sync_views as v')
    .leftJoin('sync_view_lists as l', (join) =>
      join.onRef('l.tenant_id', '=', 'v.tenant_id').onRef('l.view_id', '=', 'v.id'),
    )
    .select(['l.entity', 'l.ids'])
    .where('v.tenant_id', '=', tenantId)
    .where('v.id', '=', id)
    .where('v.user_id', '=', userId)
    .where('v.device', '=', device)
    .execute()
  if (rows.length === 0) return undefined
  const items: ViewItems = {}
  for (const row of rows) if (row.entity !== null) items[row.entity] = row.ids ?? []
  return items
}

/**
 * Of a client view, only what an incremental sync without an access change needs: which of the changed
 * records it holds, and how each presented entity was presented (`<entity>#presentation`); undefined
 * when the view is gone. Only the lists of the changed records' entities are read, each once (a
 * list is one compressed value: testing it per changed id would decompress it per id).
 */
export async function findViewAmong(
  db: Db,
  actor: Pick<Actor, 'tenantId' | 'userId'>,
  device: string,
  viewId: number,
  changed: Array<Pick<ChangeRow, 'entity' | 'entity_id'>>,
): Promise<ViewItems | undefined> {
  const entities = changed.map((row) => row.entity)
  const { rows } = await sql<{ held: Array<[string, string]>; presentations: Record<string, string[]> }>`
    select (select coalesce(json_agg(json_build_array(l.entity, e.id)), '[]')
        from sync_view_lists l cross join lateral jsonb_array_elements_text(l.ids) e(id)
        where l.tenant_id = ${actor.tenantId} and l.view_id = v.id and l.entity = any(${[...new Set(entities)]}::text[])
          and (l.entity, e.id) in (select c.entity, c.id
            from unnest(${entities}::text[], ${changed.map((row) => row.entity_id)}::text[]) as c(entity, id))) as held,
      (select coalesce(jsonb_object_agg(l.entity, l.ids), '{}') from sync_view_lists l
        where l.tenant_id = ${actor.tenantId} and l.view_id = v.id and l.entity like '%#presentation') as presentations
    from sync_views v
    where v.tenant_id = ${actor.tenantId} and v.id = ${viewId} and v.user_id = ${actor.userId} and v.device = ${device}`.execute(
    db,
  )
  if (!rows[0]) return undefined
  const items: ViewItems = { ...rows[0].presentations }
  for (const [entity, id] of rows[0].held) (items[entity] ??= []).push(id)
  return items
}

/** Stores a client view, one list per entity; keeps the device's newest `keep` views (older cursors answer 410). */
export async function insertView(
  trx: Db,
  tenantId: number,
  userId: number,
  device: string,
  version: number,
  items: ViewItems,
  keep: number,
): Promise<number> {
  const row = await trx
    .insertInto('sync_views')
    .values({ tenant_id: tenantId, user_id: userId, device, version })
    .returning('id')
    .executeTakeFirstOrThrow()
  const view = Number(row.id)
  const lists = Object.entries(items)
  if (lists.length > 0)
    await trx
      .insertInto('sync_view_lists')
      .values(
        lists.map(([entity, ids]) => ({
          tenant_id: tenantId,
          view_id: view,
          user_id: userId,
          entity,
          ids: JSON.stringify(ids),
        })),
      )
      .execute()
  const { rows: pruned } = await sql<{ id: string }>`delete from sync_views
    where tenant_id = ${tenantId} and user_id = ${userId} and device = ${device}
      and id < (select v.id from sync_views v where v.tenant_id = ${tenantId} and v.user_id = ${userId} and v.device = ${device}
        order by v.id desc offset ${keep - 1} limit 1)
    returning id`.execute(trx)
  await deleteViewLists(trx, tenantId, pruned)
  return view
}

/** The lists of client views deleted (pruned, purged). */
async function deleteViewLists(trx: Db, tenantId: number, views: Array<{ id: string }>): Promise<void> {
  if (views.length === 0) return
  await trx
    .deleteFrom('sync_view_lists')
    .where('tenant_id', '=', tenantId)
    .where('view_id', '=', sql<number>`any(${views.map((view) => view.id)}::bigint[])`)
    .execute()
}

/**
 * Purges one tenant's change records older than `before` (tombstones of deleted records, users' own
 * states of records and access changes; the latest versions of live records stay, they are the
 * records' versions) and the client views they made unusable. The clock's horizon rises to the newest purged version first, so a
 * cursor from before it answers 410 sync_reset instead of missing a deletion. One transaction, once the
 * pending records are numbered.
 */
export async function purgeTenantChanges(db: Db, tenantId: number, before: Date): Promise<number> {
  // pending records old enough to purge (no one synced since) are numbered first, like a reader's
  await findSettledClock(db, tenantId)
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ version: string | null }>`select max(version) as version from (
      select version from sync_changes where tenant_id = ${tenantId} and (deleted or ${ownStateRow})
        and changed_at < ${before}
      union all
      select version from sync_access_changes where tenant_id = ${tenantId} and created_at < ${before}) old`.execute(
      trx,
    )
    const horizon = Number(rows[0]?.version ?? 0)
    if (horizon === 0) return 0
    await sql`update sync_clocks set horizon = greatest(horizon, ${horizon}::bigint) where tenant_id = ${tenantId}`.execute(
      trx,
    )
    const changes = await sql`delete from sync_changes where tenant_id = ${tenantId} and (deleted or ${ownStateRow})
      and version <= ${horizon}`.execute(trx)
    const access =
      await sql`delete from sync_access_changes where tenant_id = ${tenantId} and version <= ${horizon}`.execute(trx)
    const { rows: purged } = await sql<{ id: string }>`delete from sync_views
      where tenant_id = ${tenantId} and version < ${horizon} returning id`.execute(trx)
    await deleteViewLists(trx, tenantId, purged)
    return Number(changes.numAffectedRows ?? 0n) + Number(access.numAffectedRows ?? 0n)
  })
}

/** The change feed's probe: whether the recorded event's type is one it listens to. */
export const isWatchedType = (type: RawBuilder<unknown>, watched: string[]) =>
  sql<boolean>`(${type} = any(${watched}::text[]))`
