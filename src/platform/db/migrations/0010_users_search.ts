/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only.
// filter[text] on users is a case-insensitive substring search over several columns; a trigram GIN
// index on the one concatenated expression serves `ilike '%…%'` at 100k+ users. The expression must
// stay identical to users.resource.ts (USER_SEARCH_TEXT) or the planner cannot use the index.
// chr(31) separates the columns so that a search never matches across two of them; first and last
// name are joined by a space so that the full name matches.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create index users_search_trgm on users using gin (
      (username || chr(31) || first_name || ' ' || last_name || chr(31) || coalesce(email, '') || chr(31) || coalesce(staff_number, ''))
      gin_trgm_ops
    )`.execute(db)
  // the daily re-derivation of `active` looks only at users whose flag follows their dates
  await sql`create index users_active_derived_idx on users (tenant_id) where active_derived and deleted_at is null`.execute(
    db,
  )
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
