import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// Content that must be read (issue 41, docs/content-reading.md): publishing (draft / scheduled /
// published), pinning, comments switch and reading confirmations on infoboard posts and manual
// entries; who saw and confirmed what; reminders and who they reached.
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['infoboard_posts', 'manual_entries']) {
    const t = sql.table(table)
    // published_at: null = draft, future = scheduled; absent on insert = now (published at once).
    // published_notified_at: set exactly once by the statement that publishes (notifications, event).
    await sql`alter table ${t}
      add column published_at timestamptz default now(),
      add column published_notified_at timestamptz,
      add column pinned boolean not null default false,
      add column comments_enabled boolean not null default true,
      add column confirmation_due_at timestamptz,
      add column reminded_at timestamptz`.execute(db)
    // what existed was published (and notified) when it was created
    await sql`update ${t} set published_at = created_at, published_notified_at = created_at`.execute(db)
  }
  await sql`alter table manual_entries add column requires_reading_confirmation boolean not null default false`.execute(
    db,
  )
  // the employee's "to confirm" list: confirmation-required posts, newest first, per tenant
  await sql`create index infoboard_posts_confirmation_idx on infoboard_posts (tenant_id, id)
    where requires_reading_confirmation`.execute(db)
  await sql`create index infoboard_posts_scheduled_idx on infoboard_posts (tenant_id, published_at)
    where published_notified_at is null`.execute(db)

  // one row per (record, user) once the user opened or confirmed it
  await sql`
    create table content_reads (
      tenant_id bigint not null references tenants (id) on delete cascade,
      target_type text not null,
      target_id bigint not null,
      user_id bigint not null,
      seen_at timestamptz not null default now(),
      confirmed_at timestamptz,
      primary key (tenant_id, target_type, target_id, user_id),
      foreign key (tenant_id, user_id) references users (tenant_id, id) on delete cascade
    )`.execute(db)
  // "what did this user read" (the pending filter probes the primary key per record)
  await sql`create index content_reads_user_idx on content_reads (tenant_id, user_id, target_type)`.execute(db)

  await sql`
    create table content_reminders (
      id bigint not null default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      target_type text not null,
      target_id bigint not null,
      actor_id bigint,
      recipients integer not null default 0,
      created_at timestamptz not null default now(),
      primary key (tenant_id, id)
    )`.execute(db)
  await sql`create index content_reminders_target_idx on content_reminders (tenant_id, target_type, target_id, created_at)`.execute(
    db,
  )
  await sql`
    create table content_reminder_recipients (
      tenant_id bigint not null,
      reminder_id bigint not null,
      user_id bigint not null,
      primary key (tenant_id, reminder_id, user_id),
      foreign key (tenant_id, reminder_id) references content_reminders (tenant_id, id) on delete cascade,
      foreign key (tenant_id, user_id) references users (tenant_id, id) on delete cascade
    )`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
