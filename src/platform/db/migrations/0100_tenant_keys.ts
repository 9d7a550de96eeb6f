/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<any>` because the schema type moves on without them.
// Keys every tenant table by tenant first, so that Citus can distribute it by tenant_id (docs/citus.md):
// primary key (tenant_id, id) instead of (id) — ids stay unique across tenants (global_id_seq) —, the
// access token hash unique together with tenant_id, and foreign keys between tenant tables that never
// set a column to null (Citus refuses ON DELETE SET NULL when the key includes the distribution column;
// users, the only rows those keys pointed at, are never deleted apart from their tenant).
const REKEYED = [
  'access_tokens',
  'automations',
  'calendar_events',
  'departments',
  'domain_events',
  'entity_permissions',
  'filemanager_directories',
  'filemanager_files',
  'folders',
  'form_messages',
  'forms',
  'generic_notifications',
  'infoboard_comments',
  'infoboard_posts',
  'manual_chapters',
  'manual_entries',
  'notification_settings',
  'outbound_messages',
  'roles',
  'shared_items',
  'task_executions',
  'users',
  'webhook_deliveries',
]

// plain (tenant_id, id) indexes that the new primary keys make redundant
const REDUNDANT_INDEXES = ['roles_tenant_idx', 'departments_tenant_idx', 'automations_tenant_idx']

export async function up(db: Kysely<any>): Promise<void> {
  // the foreign keys pointing at these tables depend on the (tenant_id, id) unique constraints replaced below
  const { rows: foreignKeys } = await sql<{ name: string; table: string; definition: string }>`
    select con.conname as name, con.conrelid::regclass::text as table, pg_get_constraintdef(con.oid) as definition
    from pg_constraint con
    where con.contype = 'f' and con.confrelid = any (${REKEYED}::text[]::regclass[])
    order by 2, 1`.execute(db)
  for (const fk of foreignKeys)
    await sql`alter table ${sql.table(fk.table)} drop constraint ${sql.ref(fk.name)}`.execute(db)

  for (const table of REKEYED) {
    const { rows: sameKey } = await sql<{ name: string }>`
      select con.conname as name from pg_constraint con
      where con.conrelid = ${table}::regclass and con.contype = 'u'
        and (select array_agg(a.attname::text order by k.i) from unnest(con.conkey) with ordinality k(attnum, i)
             join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.attnum) = array['tenant_id', 'id']`.execute(
      db,
    )
    for (const { name } of sameKey)
      await sql`alter table ${sql.table(table)} drop constraint ${sql.ref(name)}`.execute(db)
    await sql`alter table ${sql.table(table)} drop constraint ${sql.ref(`${table}_pkey`)}`.execute(db)
    await sql`alter table ${sql.table(table)} add constraint ${sql.ref(`${table}_pkey`)} primary key (tenant_id, id)`.execute(
      db,
    )
  }
  for (const index of REDUNDANT_INDEXES) await sql`drop index ${sql.ref(index)}`.execute(db)

  for (const fk of foreignKeys) {
    if (fk.name === 'departments_notification_setting_id_fkey') continue // re-made with tenant_id below
    const definition = fk.definition.replace(/\s+ON DELETE SET NULL(\s*\([^)]*\))?/i, '')
    await sql`alter table ${sql.table(fk.table)} add constraint ${sql.ref(fk.name)} ${sql.raw(definition)}`.execute(db)
  }
  await sql`alter table departments add constraint departments_notification_setting_id_fkey
    foreign key (tenant_id, notification_setting_id) references notification_settings (tenant_id, id)`.execute(db)

  // token_hash first: a token that carries no tenant (issued before this migration) is still found by its hash
  await sql`alter table access_tokens drop constraint access_tokens_token_hash_key`.execute(db)
  await sql`alter table access_tokens add constraint access_tokens_token_hash_key unique (token_hash, tenant_id)`.execute(
    db,
  )
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
