/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only.
// Fair-use limits (issue 42, docs/limits.md, decision 0023): the fleet-wide rate-limit counters (one row per
// tenant, key and window; nodes lease chunks of a window's budget from them) and the operator's
// per-tenant overrides of the default limits (raised or exempt; never written by a tenant's own administrators).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table rate_limit_counters (
      tenant_id bigint not null references tenants (id) on delete cascade,
      key text not null,
      window_start timestamptz not null,
      used int not null,
      granted int not null,
      quota int not null,
      primary key (tenant_id, key, window_start)
    )`.execute(db)
  await sql`create index rate_limit_counters_window_idx on rate_limit_counters (window_start)`.execute(db)
  await sql`
    create table tenant_limits (
      tenant_id bigint not null primary key references tenants (id) on delete cascade,
      limits jsonb not null default '{}',
      exempt boolean not null default false,
      updated_at timestamptz not null default now()
    )`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
