import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only.
// `filter[text]` searches email and staff number only for callers who may read them (issue 33); the
// others search the basic fields, whose expression this index serves (users.resource.ts).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create index users_basic_search_trgm on users using gin (
      (username || chr(31) || first_name || ' ' || last_name) gin_trgm_ops
    )`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists users_basic_search_trgm`.execute(db)
}
