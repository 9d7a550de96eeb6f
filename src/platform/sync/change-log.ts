import { type RawBuilder, sql } from 'kysely'
import { onCitus } from '../db/citus.js'
import { withClause, type CommonTableExpression } from '../db/database.js'
import type { Db } from '../db/schema.js'
import { publish, publishSql } from '../realtime/pg-pubsub.js'

/**
 * The write side of the change feed (issue 43, docs/decisions/0024-sync-feed.md): what a transaction
 * changed for offline clients, recorded in that transaction without a version (pending). A writer never
 * takes the tenant's clock (`sync_clocks`), so a tenant's writes do not wait for each other's commits. The
 * next reader of the tenant's feed numbers the pending records it sees, all committed, in a transaction of
 * its own that holds the clock row (`settleSyncClock`): a reader that sees version V has seen every change
 * numbered up to V, and a change committed later is numbered above V.
 */

/** The channel that wakes long-polling syncs (on every node: the NOTIFY is delivered with the commit). */
export const SYNC_CHANNEL = 'sync_changed'
export interface SyncChannelMessage {
  tenant: number
}

/** A message of `SYNC_CHANNEL` as `recordSyncWrites` sends it (JSON over NOTIFY): the tenant whose feed moved. */
export const isSyncChannelMessage = (payload: unknown): payload is SyncChannelMessage =>
  typeof payload === 'object' && payload !== null && 'tenant' in payload && typeof payload.tenant === 'number'

/** One synced entity changed (created, updated, deleted). `userId`: the one user who may see it (own records). */
export interface SyncChange {
  entity: string
  id: string | number
  deleted?: boolean
  userId?: number | null
}

/**
 * A user's own state of a shared record (a post's `my_state`: seen, confirmed) is part of that
 * record's data for that user only. Its change record has a key of its own, entity `<entity>/own` and
 * id `<id>/<user id>`, so it neither overwrites the record's row nor is read by anyone but its user
 * (`user_id`); the feed reads it as a change of `(<entity>, <id>)` for that user, and purges it after
 * the tombstones' retention (docs/decisions/0024-sync-feed.md).
 */
export const OWN_STATE = '/own'

/** The change record of `userId`'s own state of record `id` of `entity` (see `OWN_STATE`). */
export const ownStateChange = (entity: string, id: string | number, userId: number): SyncChange => ({
  entity: `${entity}${OWN_STATE}`,
  id: `${id}/${userId}`,
  userId,
})

/** Whose view may have changed: one user, a role's or a department's members, or every user of the tenant. */
export type AccessScope = { scope: 'tenant' } | { scope: 'user' | 'role' | 'department'; id: number }

export interface SyncWrites {
  changes?: SyncChange[]
  access?: AccessScope[]
}

/** Records entity changes and access changes of one tenant in the caller's transaction (opens one if `db` is none). */
export async function recordSyncWrites(db: Db, tenantId: number, writes: SyncWrites): Promise<void> {
  if (!db.isTransaction) return withSyncWrites(db, tenantId, (_trx, record) => record(writes))
  if (!hasWrites(writes)) return
  // in the caller's transaction the wake-up is delivered with its commit
  await wakeSyncListeners(db, tenantId)
  await recordChanges(db, tenantId, writes)
}

/**
 * Runs `write` in the caller's transaction `db`, or in one of its own; what it records with `record`
 * (`recordSyncWrites`) wakes the long polls, in a transaction of its own once it has committed (batched,
 * without the database's notify lock at its commit: decision 0029).
 */
export async function withSyncWrites<T>(
  db: Db,
  tenantId: number,
  write: (trx: Db, record: (writes: SyncWrites) => Promise<void>) => Promise<T>,
): Promise<T> {
  if (db.isTransaction) return write(db, (writes) => recordSyncWrites(db, tenantId, writes))
  let recorded = false
  const result = await db.transaction().execute((trx) =>
    write(trx, async (writes) => {
      if (!hasWrites(writes)) return
      await recordChanges(trx, tenantId, writes)
      recorded = true
    }),
  )
  if (recorded) await wakeSyncListeners(db, tenantId)
  return result
}

const hasWrites = (writes: SyncWrites) => (writes.changes?.length ?? 0) > 0 || (writes.access?.length ?? 0) > 0

async function recordChanges(trx: Db, tenantId: number, writes: SyncWrites): Promise<void> {
  const changes = [...new Map((writes.changes ?? []).map((c) => [`${c.entity}:${c.id}`, c])).values()]
  const access = writes.access ?? []
  if (changes.length > 0) {
    await trx
      .insertInto('sync_changes')
      .values(
        changes.map((c) => ({
          tenant_id: tenantId,
          entity: c.entity,
          entity_id: String(c.id),
          version: null,
          deleted: c.deleted ?? false,
          user_id: c.userId ?? null,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['tenant_id', 'entity', 'entity_id']).doUpdateSet((eb) => ({
          version: eb.ref('excluded.version'), // pending again
          deleted: eb.ref('excluded.deleted'),
          user_id: eb.ref('excluded.user_id'),
          changed_at: eb.ref('excluded.changed_at'),
        })),
      )
      .execute()
  }
  if (access.length > 0) {
    await trx
      .insertInto('sync_access_changes')
      .values(
        access.map((a) => ({
          tenant_id: tenantId,
          version: null,
          scope: a.scope,
          scope_id: a.scope === 'tenant' ? null : a.id,
        })),
      )
      .execute()
  }
}

/**
 * `recordSyncWrites` of records a caller's single statement writes (no transaction of its own, decision
 * 0005): a common table expression recording a pending change of each row of the CTE `rows` (columns `id`
 * and `user_id`); `notify` is the select-list item waking the long polls.
 */
function syncChangesSql(tenantId: number, entity: string, rows: string) {
  return {
    ctes: syncChangeCtes(tenantId, entity, rows),
    notify: publishSql(SYNC_CHANNEL, { tenant: tenantId } satisfies SyncChannelMessage),
  }
}

/**
 * The common table expressions of `syncChangesSql` alone. `tenantId` may be a shaped statement's
 * stand-in (it is only passed on as a parameter); wake the long polls with `wakeSyncListeners` once committed.
 */
export function syncChangeCtes(tenantId: number, entity: string, rows: string): CommonTableExpression[] {
  const written = sql.table(rows)
  return [
    [
      'sync_recorded',
      sql`insert into sync_changes (tenant_id, entity, entity_id, version, deleted, user_id)
          select ${tenantId}::bigint, ${entity}, r.id::text, null, false, r.user_id from ${written} r
          on conflict (tenant_id, entity, entity_id) do update set version = excluded.version,
            deleted = excluded.deleted, user_id = excluded.user_id, changed_at = excluded.changed_at`,
    ],
  ]
}

/**
 * Wakes the tenant's long polls on every node, once the caller's writes have committed (outside a
 * transaction: batched, without the database's notify lock at the writes' commit; `publish`).
 */
export const wakeSyncListeners = (db: Db, tenantId: number): Promise<void> =>
  publish(db, SYNC_CHANNEL, { tenant: tenantId } satisfies SyncChannelMessage)

/**
 * `writeWithSyncChanges` for a write that must commit with more statements of the caller's transaction
 * `trx` (a fan-out's chunk commits with its delivery job): the change records still ride in the write's
 * statement. On a Citus coordinator (no writing common table expressions there) the write, then
 * `recordSyncWrites`.
 */
export async function writeWithSyncChangesInTransaction(
  trx: Db,
  tenantId: number,
  entity: string,
  write: RawBuilder<unknown>,
): Promise<WrittenRecord[]> {
  if (!onCitus()) return writeWithChangesRiding(trx, tenantId, entity, write, 'in the statement')
  const { rows } = await sql<WrittenRecord>`${write}`.execute(trx)
  await recordSyncWrites(trx, tenantId, {
    changes: rows.map((row) => ({ entity, id: row.id, userId: Number(row.user_id) })),
  })
  return rows
}

/**
 * A write of one statement with its change records riding along (`syncChangesSql`): `write` is the
 * statement (returning `id` and `user_id` of each record changed): one round trip, no transaction. The
 * records changed; undefined on a Citus coordinator,
 * where a writing common table expression is evaluated from the coordinator: the caller writes in a
 * transaction with `recordSyncWrites` there.
 */
export async function writeWithSyncChanges(
  db: Db,
  tenantId: number,
  entity: string,
  write: RawBuilder<unknown>,
): Promise<WrittenRecord[] | undefined> {
  if (onCitus() || db.isTransaction) return undefined
  const written = await writeWithChangesRiding(db, tenantId, entity, write, 'once committed')
  if (written.length > 0) await wakeSyncListeners(db, tenantId)
  return written
}

/** A record a write changed: its id and the one user it is about. */
interface WrittenRecord {
  id: string
  user_id: number
}

/**
 * The write and its change records (`syncChangesSql`) in one statement. The wake-up: in the statement when
 * it commits with a caller's transaction (only when it wrote), else the caller's, once committed (`publish`
 * outside a transaction: the statement's commit does not take the database's notify lock).
 */
async function writeWithChangesRiding(
  db: Db,
  tenantId: number,
  entity: string,
  write: RawBuilder<unknown>,
  wakeUp: 'in the statement' | 'once committed',
) {
  const feed = syncChangesSql(tenantId, entity, 'written')
  const notified =
    wakeUp === 'in the statement' ? sql`case when exists (select from written) then ${feed.notify} end` : sql`null`
  const { rows } = await sql<{ written: WrittenRecord[] | null; notified: unknown }>`
    ${withClause([['written', write], ...feed.ctes])}
    select (select json_agg(json_build_object('id', w.id, 'user_id', w.user_id)) from written w) as written,
      ${notified} as notified`.execute(db)
  return rows[0]!.written ?? []
}

/** Pending change records of a tenant (written, not yet numbered), as a reader counted them. */
export interface PendingChanges {
  changes: number
  access: number
}

/** A tenant's clock as a reader finds it: its version, its purge horizon and its pending change records. */
export interface SyncClockState {
  version: number
  horizon: number
  pending: PendingChanges
}

/** A row of `syncClockColumns`. */
export interface SyncClockRow {
  version: string | null
  horizon: string | null
  changes: string
  access: string
}

/**
 * Where the tenant's pending records can start (`sync_clocks.pending_from`, set by each numbering): the
 * records numbered before it leave dead entries in the pending partial indexes until a vacuum of the whole
 * table, and a probe that started at the tenant's first entry walked them all (a burst of 100,000: 386
 * index pages a probe).
 */
const pendingFrom = (tenantId: number) =>
  sql`coalesce((select c.pending_from from sync_clocks c where c.tenant_id = ${tenantId}), '-infinity')`

/**
 * SQL select-list items of a tenant's clock (`version`, `horizon`: null before its first numbering) and
 * of its pending change records counted from their partial indexes (`changes`, `access`: a probe each
 * when none is pending).
 */
export const syncClockColumns = (tenantId: number) =>
  sql`(select c.version from sync_clocks c where c.tenant_id = ${tenantId}) as version,
    (select c.horizon from sync_clocks c where c.tenant_id = ${tenantId}) as horizon,
    (select count(*) from sync_changes p where p.tenant_id = ${tenantId} and p.version is null
      and p.changed_at >= ${pendingFrom(tenantId)}) as changes,
    (select count(*) from sync_access_changes p where p.tenant_id = ${tenantId} and p.version is null
      and p.created_at >= ${pendingFrom(tenantId)}) as access`

/**
 * The earliest start of a transaction of this database still running (or now): a record written by a
 * transaction that has not committed yet changed at or after it (`changed_at` and `created_at` are the
 * writer's `now()`, its transaction's start). Null when a session of the database is hidden from this
 * role (`pg_stat_activity` shows it without its state): the probes then start at the first entry.
 */
const EARLIEST_RUNNING = sql<{ pending_from: string | null }>`
  select (case when bool_or(a.state is null) then null else least(now(), min(a.xact_start)) end)::text as pending_from
    from pg_stat_activity a
   where a.datname = current_database() and a.backend_type = 'client backend' and a.pid <> pg_backend_pid()`

/** The clock state of a `syncClockColumns` row. */
export const syncClockState = (row: SyncClockRow): SyncClockState => ({
  version: Number(row.version ?? 0),
  horizon: Number(row.horizon ?? 0),
  pending: { changes: Number(row.changes), access: Number(row.access) },
})

/** The tenant's clock and its pending change records, in one statement. */
export async function readSyncClock(db: Db, tenantId: number): Promise<SyncClockState> {
  const { rows } = await sql<SyncClockRow>`select ${syncClockColumns(tenantId)}`.execute(db)
  return syncClockState(rows[0]!)
}

/**
 * Numbers a tenant's pending change records (decision 0024, 2), one reader at a time (a transaction
 * advisory lock: the readers a wake-up sends at once queue there and find nothing left to number, without
 * a write of their own to commit). Under the lock the pending records are counted again, the clock row
 * moves up by that many versions, and at most that many records still pending, oldest first, take them;
 * the rest stay pending for the next reader. A version left unused is a gap, which nothing reads. The
 * clock row's lock keeps this true where the advisory lock is not shared (Citus nodes other than the
 * coordinator). The tenant's clock afterwards.
 */
export async function settleSyncClock(db: Db, tenantId: number): Promise<{ version: number; horizon: number }> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`sync-clock:${tenantId}`}, 0))`.execute(trx)
    // before the count: a record it does not see was written by a transaction running now, or started later
    const { rows: running } = await EARLIEST_RUNNING.execute(trx)
    // counted again under the lock: what the reader before this one numbered is not pending any more
    const { version, horizon, pending } = await readSyncClock(trx, tenantId)
    const reserved = pending.changes + pending.access
    if (reserved === 0) return { version, horizon }
    const { rows } = await sql<{ version: string; horizon: string }>`
      insert into sync_clocks (tenant_id, version) values (${tenantId}, ${reserved})
      on conflict (tenant_id) do update set version = sync_clocks.version + ${reserved}::bigint
      returning version, horizon`.execute(trx)
    const clock = { version: Number(rows[0]!.version), horizon: Number(rows[0]!.horizon) }
    const base = clock.version - reserved
    // each pending row found by its physical address (ctid): a join on the key lets the planner, which
    // sees few pending rows, scan the pending ones once per pending row. A row rewritten since has moved:
    // it stays pending, for the next reader.
    if (pending.changes > 0)
      await sql`update sync_changes s set version = ${base}::bigint + p.n
        from (select ctid as row, row_number() over (order by changed_at, entity, entity_id) as n
          from sync_changes where tenant_id = ${tenantId} and version is null and changed_at >= ${pendingFrom(tenantId)}
          order by changed_at, entity, entity_id limit ${pending.changes}) p
        where s.ctid = p.row and s.tenant_id = ${tenantId} and s.version is null`.execute(trx)
    if (pending.access > 0)
      await sql`update sync_access_changes a set version = ${base + pending.changes}::bigint + p.n
        from (select ctid as row, row_number() over (order by created_at, id) as n
          from sync_access_changes where tenant_id = ${tenantId} and version is null and created_at >= ${pendingFrom(tenantId)}
          order by created_at, id limit ${pending.access}) p
        where a.ctid = p.row and a.tenant_id = ${tenantId} and a.version is null`.execute(trx)
    // last: the numbering above still starts where the records left pending by the reader before could
    // as text, in microseconds: the driver's timestamps are the API's, in seconds
    await sql`update sync_clocks set pending_from = ${running[0]?.pending_from ?? null}::timestamptz
      where tenant_id = ${tenantId}`.execute(trx)
    return clock
  })
}
