import { type RawBuilder, sql } from 'kysely'
import { onCitus } from '../db/citus.js'
import { withClause, type CommonTableExpression } from '../db/database.js'
import type { Db } from '../db/schema.js'
import { publish, publishSql } from '../realtime/pg-pubsub.js'

/**
 * The write side of the change feed (issue 43, docs/decisions/0024-sync-feed.md): what a transaction
 * changed for offline clients, recorded in that transaction. Every recording takes the next version of
 * the tenant's clock (`sync_clocks`) and holds that row's lock until commit, so a reader that sees
 * version V has also seen every change at or below V: versions become visible in commit order.
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

/** Takes the tenant's next version; the row stays locked until the caller's transaction ends. */
async function nextVersion(trx: Db, tenantId: number): Promise<number> {
  const row = await trx
    .insertInto('sync_clocks')
    .values({ tenant_id: tenantId, version: 1 })
    .onConflict((oc) => oc.column('tenant_id').doUpdateSet((eb) => ({ version: eb('sync_clocks.version', '+', 1) })))
    .returning('version')
    .executeTakeFirstOrThrow()
  return Number(row.version)
}

/** Records entity changes and access changes of one tenant in the caller's transaction (opens one if `db` is none). */
export async function recordSyncWrites(db: Db, tenantId: number, writes: SyncWrites): Promise<void> {
  if (!db.isTransaction) return withSyncWrites(db, tenantId, (_trx, record) => record(writes))
  if (!hasWrites(writes)) return
  // the wake-up first: a NOTIFY is delivered at the commit wherever it stands in the transaction, and
  // every write of the tenant waits for the clock row until that commit, so the row is held over the
  // change records' insert and the commit only (on Citus each statement is a hop to the worker too)
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
  const version = await nextVersion(trx, tenantId)
  if (changes.length > 0) {
    await trx
      .insertInto('sync_changes')
      .values(
        changes.map((c) => ({
          tenant_id: tenantId,
          entity: c.entity,
          entity_id: String(c.id),
          version,
          deleted: c.deleted ?? false,
          user_id: c.userId ?? null,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['tenant_id', 'entity', 'entity_id']).doUpdateSet((eb) => ({
          version: eb.ref('excluded.version'),
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
          version,
          scope: a.scope,
          scope_id: a.scope === 'tenant' ? null : a.id,
        })),
      )
      .execute()
  }
}

/**
 * `recordSyncWrites` of records a caller's single statement writes (no transaction of its own, decision
 * 0005): common table expressions that take the tenant's next version (its row lock held to the
 * statement's commit) and record a change of each row of the CTE `rows` (columns `id` and `user_id`),
 * only when it has rows; `notify` is the select-list item waking the long polls.
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
      'sync_clock',
      sql`insert into sync_clocks (tenant_id, version) select ${tenantId}::bigint, 1 where exists (select from ${written})
          on conflict (tenant_id) do update set version = sync_clocks.version + 1 returning version`,
    ],
    [
      'sync_recorded',
      sql`insert into sync_changes (tenant_id, entity, entity_id, version, deleted, user_id)
          select ${tenantId}::bigint, ${entity}, r.id::text, c.version, false, r.user_id from ${written} r cross join sync_clock c
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
 * statement, so the clock's row is locked from there to the commit, not from a statement of its own. On a
 * Citus coordinator (no writing common table expressions there) the write, then `recordSyncWrites`.
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
 * statement (returning `id` and `user_id` of each record changed), the tenant's clock row is locked only
 * from the ride to the commit (a transaction of `recordSyncWrites` holds it for several round trips, and
 * every write of the tenant waits behind it). The records changed; undefined on a Citus coordinator,
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
