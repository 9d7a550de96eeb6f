import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// The permission-aware change feed (issue 43, docs/sync.md, decision sync-feed): a change counter per
// tenant, one record per syncing client (user + device) and, per client, the version of every entity
// it was last sent (Replicache's row-version strategy: the next sync diffs the recomputed view against it).
export async function up(db: Kysely<unknown>): Promise<void> {
  // bumped before the COMMIT of every transaction that wrote a table the feed reads (platform/db/change-notices.ts)
  await sql`
    create table sync_clocks (
      tenant_id bigint not null references tenants (id) on delete cascade,
      seq bigint not null default 0,
      primary key (tenant_id)
    )`.execute(db)
  await sql`
    create table sync_clients (
      id bigint not null default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      user_id bigint not null,
      device_id text not null,
      -- bumped by every sync that answers: a cursor names the generation it was issued at
      generation integer not null default 0,
      -- the tenant's clock when its view was last recomputed completely (null: never, or more to send)
      clock_seq bigint,
      -- the earliest time the view changes without a write (a scheduled record publishing)
      recheck_at timestamptz,
      created_at timestamptz not null default now(),
      synced_at timestamptz not null default now(),
      primary key (tenant_id, id),
      unique (tenant_id, user_id, device_id),
      foreign key (tenant_id, user_id) references users (tenant_id, id) on delete cascade
    )`.execute(db)
  await sql`create index sync_clients_synced_idx on sync_clients (tenant_id, synced_at)`.execute(db)
  // what the client was sent: entity → id → version (a hash of the presented data)
  await sql`
    create table sync_client_rows (
      tenant_id bigint not null,
      client_id bigint not null,
      entity text not null,
      entity_id text not null,
      version text not null,
      primary key (tenant_id, client_id, entity, entity_id),
      foreign key (tenant_id, client_id) references sync_clients (tenant_id, id) on delete cascade
    )`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
