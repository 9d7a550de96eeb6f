import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// Where a tenant's pending change records can start (issue 43, docs/decisions/0024-sync-feed.md, item 2): a
// record a reader numbered leaves a dead entry in the pending partial index until a vacuum of the whole
// table, and every later probe of the tenant walked them (S18 after a burst of writes: 0.10 of its
// baseline). Every record still pending after a numbering was written by a transaction that started at or
// after `pending_from`, so the probes start there.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table sync_clocks add column pending_from timestamptz`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
