/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<any>` because the schema type moves on without them.
export async function up(db: Kysely<any>): Promise<void> {
  // A sent generic notification (contract 40). Recipient lists live here, not in the job payload,
  // so that a send to thousands of IDs keeps the queued job small.
  await sql`
    create table generic_notifications (
      id bigint primary key default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      title text not null,
      body text not null,
      url text not null,
      user_id bigint,
      department_ids bigint[] not null default '{}',
      user_ids bigint[] not null default '{}',
      created_at timestamptz not null default now(),
      unique (tenant_id, id)
    )`.execute(db)

  // Per-user records. Keyed (tenant_id, id) so that the table can be distributed by tenant (Citus).
  // source_key names the event that produced the record (e.g. `genericNotification:42`): unique per
  // recipient, so a retried fan-out job inserts nothing twice.
  await sql`
    create table notifications (
      id uuid not null default gen_random_uuid(),
      tenant_id bigint not null references tenants (id) on delete cascade,
      type text not null,
      notifiable_type text not null default 'user',
      notifiable_id bigint not null,
      targetable_type text not null,
      targetable_id bigint not null,
      source_key text not null,
      data jsonb not null default '{}',
      seen_at timestamptz,
      read_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, id),
      foreign key (tenant_id, notifiable_id) references users (tenant_id, id) on delete cascade
    )`.execute(db)
  // The list's default order (created_at desc, id desc — NULLS LAST exactly as the query layer emits
  // it) so that the first page is an index range scan for one user among millions of records.
  await sql`create index notifications_user_created_idx on notifications (tenant_id, notifiable_id, created_at desc nulls last, id desc nulls last)`.execute(
    db,
  )
  // Unread count and the unread page stay O(unread of one user).
  await sql`create index notifications_user_unread_idx on notifications (tenant_id, notifiable_id, created_at desc nulls last, id desc nulls last) where read_at is null`.execute(
    db,
  )
  await sql`create index notifications_user_target_idx on notifications (tenant_id, notifiable_id, targetable_type, targetable_id)`.execute(
    db,
  )
  await sql`create unique index notifications_source_uniq on notifications (tenant_id, source_key, notifiable_id)`.execute(
    db,
  )
  // Retention deletes read records older than N days across tenants.
  await sql`create index notifications_read_at_idx on notifications (read_at) where read_at is not null`.execute(db)

  // Email and push payloads stored (no SMTP configured / no push service) or recorded as sent.
  // unique (tenant_id, channel, notification_id): a retried delivery job never sends twice what it recorded.
  await sql`
    create table outbound_messages (
      id bigint primary key default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      channel text not null check (channel in ('email', 'push')),
      status text not null check (status in ('stored', 'sent')),
      user_id bigint,
      notification_id uuid,
      recipient text,
      subject text,
      body_html text,
      body_text text,
      payload jsonb not null default '{}',
      created_at timestamptz not null default now(),
      unique (tenant_id, channel, notification_id)
    )`.execute(db)
  await sql`create index outbound_messages_tenant_idx on outbound_messages (tenant_id, created_at)`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
