import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// The reach report (issue 41, docs/content-reading.md) reads every audience candidate of a tenant (active,
// personal, not deleted or blacked out) with their role, twice: an index holding exactly those users and
// their role turns both reads into index-only scans (on the full seed, 100 ms → 20 ms per read of a
// 100,000-user tenant) instead of reading the wide users rows.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create index users_audience_idx on users (tenant_id, id) include (role_id)
    where active and deleted_at is null and blacked_out_at is null and not group_account`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
