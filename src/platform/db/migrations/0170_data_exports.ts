import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// Personal-data exports and retention per tenant (GDPR Art. 15/17/20, issue 45, docs/data-protection.md): one row per requested
// archive; the ZIP lives in the storage directory (`data-exports/<tenant>/<random>.zip`) until it
// expires. The download link's token is stored as its SHA-256 only, and is used once.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table data_exports (
      id bigint not null default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      user_id bigint not null,
      requested_by bigint,
      status text not null default 'pending' check (status in ('pending', 'ready', 'failed', 'expired')),
      file_name text,
      size bigint,
      error text,
      created_at timestamptz not null default now(),
      ready_at timestamptz,
      expires_at timestamptz,
      link_hash bytea,
      link_expires_at timestamptz,
      primary key (tenant_id, id)
    )`.execute(db)
  await sql`create index data_exports_user_idx on data_exports (tenant_id, user_id, created_at)`.execute(db)
  await sql`create index data_exports_expiry_idx on data_exports (expires_at) where status = 'ready'`.execute(db)

  // retention per tenant (GET/PUT /api/administration/retention): days per data class; a missing row
  // is the documented default (src/modules/retention/retention-classes.ts)
  await sql`
    create table retention_settings (
      tenant_id bigint not null references tenants (id) on delete cascade,
      data_class text not null,
      days integer not null check (days between 1 and 36500),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, data_class)
    )`.execute(db)
  // the sweep's range scans: what is older than a period, per tenant
  await sql`create index shared_item_accesses_created_idx on shared_item_accesses (tenant_id, created_at)`.execute(db)
  await sql`create index outbound_messages_created_idx on outbound_messages (tenant_id, created_at)`.execute(db)
  await sql`create index notifications_tenant_read_idx on notifications (tenant_id, read_at) where read_at is not null`.execute(
    db,
  )
  await sql`create index notifications_tenant_unread_idx on notifications (tenant_id, created_at) where read_at is null`.execute(
    db,
  )
  await sql`create index webhook_deliveries_created_idx on webhook_deliveries (tenant_id, created_at)`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
