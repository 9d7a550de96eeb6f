/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. Automations (contract 50) and their webhook delivery log.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table automations (
      id bigint primary key default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      name text not null,
      event text not null,
      active boolean not null default true,
      actions jsonb not null default '[]',
      user_id bigint,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (tenant_id, id)
    )`.execute(db)
  // the domain-event subscriber looks up active automations by (tenant, event) inside every change
  await sql`create index automations_tenant_event_idx on automations (tenant_id, event) where active`.execute(db)
  await sql`create index automations_tenant_idx on automations (tenant_id, id)`.execute(db)

  await sql`
    create table webhook_deliveries (
      id bigint primary key default nextval('global_id_seq'),
      tenant_id bigint not null,
      automation_id bigint not null,
      action_index integer not null,
      event_id uuid not null,
      event_type text not null,
      event_timestamp text not null,
      event_data jsonb not null default '{}',
      url text not null,
      method text not null,
      status text not null default 'pending' check (status in ('pending', 'succeeded', 'retrying', 'failed')),
      series integer not null default 1,
      attempts integer not null default 0,
      response_status integer,
      response_time_ms integer,
      response_body text,
      error text,
      next_attempt_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      foreign key (tenant_id, automation_id) references automations (tenant_id, id) on delete cascade,
      unique (tenant_id, automation_id, event_id, action_index)
    )`.execute(db)
  await sql`create index webhook_deliveries_automation_idx on webhook_deliveries (tenant_id, automation_id, id desc)`.execute(
    db,
  )
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
