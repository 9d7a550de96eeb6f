/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only.
// Every API process caches token → actor lookups; a committed change to what an actor is made of
// (token revocation, user state, role permissions, department membership) NOTIFYs channel
// `actor_changed` with the tenant id, so every process drops that tenant's cached actors at once.
// Statement-level triggers with transition tables: one NOTIFY per tenant and statement, not per row.
const WATCHED: Array<[table: string, events: Array<'insert' | 'update' | 'delete'>]> = [
  ['access_tokens', ['update', 'delete']], // a new token is in no cache yet
  ['users', ['update', 'delete']],
  ['roles', ['update', 'delete']],
  ['department_users', ['insert', 'update', 'delete']],
]

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create function notify_actor_changed() returns trigger language plpgsql as $$
    begin
      perform pg_notify('actor_changed', tenant_id::text) from (select distinct tenant_id from changed_rows) changed;
      return null;
    end $$`.execute(db)
  for (const [table, events] of WATCHED) {
    for (const event of events) {
      const rows = event === 'delete' ? sql.raw('old table') : sql.raw('new table')
      await sql`create trigger ${sql.raw(`${table}_${event}_notify_actor_changed`)}
        after ${sql.raw(event)} on ${sql.table(table)} referencing ${rows} as changed_rows
        for each statement execute function notify_actor_changed()`.execute(db)
    }
  }
}
