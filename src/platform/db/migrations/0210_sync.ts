import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// The change feed of offline clients (issue 43, docs/sync.md, docs/decisions/0024-sync-feed.md):
// - sync_clocks: one row per tenant, the tenant's change clock; a writer bumps it in its transaction
//   and holds the row lock until commit, so versions become visible in commit order;
// - sync_changes: the latest change of each synced entity (upserted: one row per entity ever changed,
//   not one per change), `deleted` a tombstone, `user_id` set for records only their owner sees;
// - sync_access_changes: "the view of these users may have changed" (a grant, role, department,
//   folder move, user change) at a version, scoped to a user, a role, a department or the tenant;
// - sync_views: what a client holds at a cursor (entity → ids), the client-view record diffed after
//   an access change; a few per device are kept.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table sync_clocks (
    tenant_id bigint primary key references tenants (id) on delete cascade,
    version bigint not null default 0,
    horizon bigint not null default 0
  )`.execute(db)
  await sql`create table sync_changes (
    tenant_id bigint not null references tenants (id) on delete cascade,
    entity text not null,
    entity_id text not null,
    version bigint not null,
    deleted boolean not null default false,
    user_id bigint,
    changed_at timestamptz not null default now(),
    primary key (tenant_id, entity, entity_id)
  )`.execute(db)
  await sql`create index sync_changes_version_idx on sync_changes (tenant_id, version)`.execute(db)
  await sql`create table sync_access_changes (
    tenant_id bigint not null references tenants (id) on delete cascade,
    id bigint not null default nextval('global_id_seq'),
    version bigint not null,
    scope text not null check (scope in ('tenant', 'user', 'role', 'department')),
    scope_id bigint,
    created_at timestamptz not null default now(),
    primary key (tenant_id, id)
  )`.execute(db)
  await sql`create index sync_access_changes_version_idx on sync_access_changes (tenant_id, version)`.execute(db)
  await sql`create table sync_views (
    tenant_id bigint not null references tenants (id) on delete cascade,
    id bigint not null default nextval('global_id_seq'),
    user_id bigint not null,
    device text not null,
    version bigint not null,
    items jsonb not null,
    created_at timestamptz not null default now(),
    primary key (tenant_id, id)
  )`.execute(db)
  await sql`create index sync_views_device_idx on sync_views (tenant_id, user_id, device, id)`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
