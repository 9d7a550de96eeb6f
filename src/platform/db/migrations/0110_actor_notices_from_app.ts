/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only.
// The actor_changed NOTIFYs move from the triggers of 0070 into the app (db/change-notices.ts): on
// Citus a trigger on a distributed table runs on the worker holding the shard, and its NOTIFY would
// never reach the listeners on the coordinator.
const TRIGGERS: Array<[table: string, event: string]> = [
  ['access_tokens', 'update'],
  ['access_tokens', 'delete'],
  ['users', 'update'],
  ['users', 'delete'],
  ['roles', 'update'],
  ['roles', 'delete'],
  ['department_users', 'insert'],
  ['department_users', 'update'],
  ['department_users', 'delete'],
]

export async function up(db: Kysely<any>): Promise<void> {
  for (const [table, event] of TRIGGERS) {
    await sql`drop trigger if exists ${sql.raw(`${table}_${event}_notify_actor_changed`)} on ${sql.table(table)}`.execute(
      db,
    )
  }
  await sql`drop function if exists notify_actor_changed()`.execute(db)
}
