import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// The file_bytes quota (issue 42, docs/limits.md): a file's poster is stored beside it (up to 5 MiB) and
// counts too, so its size is kept with the record. Posters uploaded before this migration count as 0.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table filemanager_files add column poster_size bigint not null default 0`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
