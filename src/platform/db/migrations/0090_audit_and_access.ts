/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. Audit log (issue 17) and the share access log.
// Citus-ready: primary key (tenant_id, id), foreign keys only to tenants; no FK to users (ids outlive them).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table audit_log (
      id bigint not null default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      created_at timestamptz not null default now(),
      actor_id bigint,
      action text not null,
      target_type text not null,
      target_id text,
      changes jsonb not null default '{}',
      request_id text,
      ip text,
      user_agent text,
      primary key (tenant_id, id)
    )`.execute(db)
  await sql`create index audit_log_tenant_created_idx on audit_log (tenant_id, created_at)`.execute(db)
  await sql`create index audit_log_tenant_target_idx on audit_log (tenant_id, target_type, target_id)`.execute(db)
  await sql`create index audit_log_tenant_actor_idx on audit_log (tenant_id, actor_id)`.execute(db)

  await sql`
    create table shared_item_accesses (
      id bigint not null default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      shared_item_id text not null,
      user_id bigint,
      outcome text not null check (outcome in ('redirected', 'grant_token_issued', 'resolved_without_redirect', 'denied', 'not_found')),
      url_type text,
      created_at timestamptz not null default now(),
      primary key (tenant_id, id)
    )`.execute(db)
  await sql`create index shared_item_accesses_item_idx on shared_item_accesses (tenant_id, shared_item_id, id)`.execute(
    db,
  )
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
