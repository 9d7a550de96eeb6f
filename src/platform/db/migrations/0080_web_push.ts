/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only.
// Web Push (RFC 8030/8291/8292): the API's VAPID key pair, the browsers' subscriptions, every delivery
// attempt; per-category channel preferences and email digests (issue 14). Tenant tables are keyed
// (tenant_id, …) and reference only tenants (Citus-ready); rows of a user are removed by the app in the
// transaction that deletes, blacks out or logs out the user.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table push_vapid_keys (
      id bigint primary key default nextval('global_id_seq'),
      public_key text not null,
      private_key text not null,
      created_at timestamptz not null default now()
    )`.execute(db)
  await sql`
    create table push_subscriptions (
      id bigint not null default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      user_id bigint not null,
      endpoint text not null,
      p256dh text not null,
      auth text not null,
      expiration_time bigint,
      user_agent text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, id),
      unique (tenant_id, endpoint)
    )`.execute(db)
  await sql`create index push_subscriptions_user_idx on push_subscriptions (tenant_id, user_id)`.execute(db)
  await sql`
    create table push_deliveries (
      id bigint not null default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      subscription_id bigint not null,
      notification_id uuid not null,
      attempt int not null,
      status text not null check (status in ('sent', 'retrying', 'gone', 'failed')),
      response_status int,
      error text,
      created_at timestamptz not null default now(),
      primary key (tenant_id, id)
    )`.execute(db)
  await sql`create index push_deliveries_notification_idx on push_deliveries (tenant_id, notification_id, subscription_id)`.execute(
    db,
  )
  await sql`
    create table notification_preferences (
      tenant_id bigint not null references tenants (id) on delete cascade,
      user_id bigint not null,
      notification_setting_id bigint not null,
      push boolean not null default true,
      email boolean not null default true,
      primary key (tenant_id, user_id, notification_setting_id)
    )`.execute(db)
  await sql`alter table users add column email_digest text not null default 'immediate' check (email_digest in ('immediate', 'daily', 'weekly'))`.execute(
    db,
  )
  // one row per user and period: the claim that makes a digest go out once, whatever retries and workers do
  await sql`
    create table email_digests (
      tenant_id bigint not null references tenants (id) on delete cascade,
      user_id bigint not null,
      period text not null,
      covered_until timestamptz not null,
      notification_count int not null,
      sent_at timestamptz,
      primary key (tenant_id, user_id, period)
    )`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
