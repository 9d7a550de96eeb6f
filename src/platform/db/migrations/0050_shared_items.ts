/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. Shared items (contract 30): UUID ids, soft delete, polymorphic target.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table shared_items (
      id uuid primary key default gen_random_uuid(),
      tenant_id bigint not null references tenants (id) on delete cascade,
      user_id bigint,
      type text not null,
      redirect_type text not null check (redirect_type in ('none', 'redirect', 'redirectWithGrantToken')),
      targetable_type text not null,
      targetable_id text not null,
      config jsonb not null default '{}'::jsonb check (jsonb_typeof(config) = 'object'),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      deleted_at timestamptz,
      unique (tenant_id, id),
      foreign key (tenant_id, user_id) references users (tenant_id, id) on delete set null (user_id)
    )`.execute(db)
  await sql`create index shared_items_tenant_idx on shared_items (tenant_id, created_at, id)`.execute(db)
  await sql`create index shared_items_target_idx on shared_items (tenant_id, targetable_type, targetable_id)`.execute(
    db,
  )
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
