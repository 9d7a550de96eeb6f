import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// A fan-out writes its records (and their change-feed records, keyed by the record's id as text) in
// chunks of consecutive rows. With random ids every row of a chunk lands on another leaf page of the
// primary keys (of notifications and of sync_changes): on the bench's 100,000-user publish, a page read
// and a page dirtied per row and index, most of the chunk's time (docs/performance.md, "Publishing to
// 100,000 users"). Time-ordered ids (UUID version 7, RFC 9562) append at the keys' right edge instead.
// `uuidv7()` is PostgreSQL 18's; a server without it (the Citus cluster's PostgreSQL 15) keeps random ids.
export async function up(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ available: boolean }>`
    select to_regprocedure('uuidv7()') is not null as available`.execute(db)
  if (rows[0]?.available) await sql`alter table notifications alter column id set default uuidv7()`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
