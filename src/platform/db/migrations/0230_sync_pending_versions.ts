import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// The change feed's versions are given when read, not when written (issue 43, docs/decisions/0024-sync-feed.md,
// decision 2): a writer records its changes without a version (pending) and never takes the tenant's
// clock row, so a tenant's writes no longer wait for each other's commits. A reader that finds pending
// records numbers them in a transaction of its own (one reader at a time), then reads up to the clock.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table sync_changes alter column version drop not null`.execute(db)
  await sql`alter table sync_access_changes alter column version drop not null`.execute(db)
  await sql`create index sync_changes_pending_idx on sync_changes (tenant_id, changed_at) where version is null`.execute(
    db,
  )
  await sql`create index sync_access_changes_pending_idx on sync_access_changes (tenant_id, created_at)
    where version is null`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
