/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<any>` because the schema type moves on without them.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create extension if not exists pg_trgm`.execute(db)
  await sql`create extension if not exists pgcrypto`.execute(db)
  await sql`create sequence global_id_seq`.execute(db)

  await sql`
    create table tenants (
      id bigint primary key default nextval('global_id_seq'),
      slug text not null unique check (slug ~ '^[a-z0-9][a-z0-9-]{1,62}$'),
      name text not null,
      settings jsonb not null default '{}',
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db)

  await sql`
    create table languages (
      id text primary key,
      name text not null
    )`.execute(db)
  await sql`
    insert into languages (id, name) values
      ('en-US', 'English (US)'), ('en-GB', 'English (UK)'), ('de-DE', 'Deutsch'),
      ('fr-FR', 'Français'), ('es-ES', 'Español'), ('it-IT', 'Italiano'), ('nl-NL', 'Nederlands'),
      ('pl-PL', 'Polski'), ('pt-PT', 'Português'), ('tr-TR', 'Türkçe')`.execute(db)

  await sql`
    create table roles (
      id bigint primary key default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      name text not null,
      permissions text[] not null default '{}',
      active boolean not null default true,
      folder_id bigint,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (tenant_id, id)
    )`.execute(db)
  await sql`create index roles_tenant_idx on roles (tenant_id, id)`.execute(db)

  await sql`
    create table notification_settings (
      id bigint primary key default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      key text not null,
      sort_number integer not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (tenant_id, key)
    )`.execute(db)

  await sql`
    create table departments (
      id bigint primary key default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      name text not null,
      folder_id bigint,
      notification_setting_id bigint references notification_settings (id) on delete set null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (tenant_id, id)
    )`.execute(db)
  await sql`create index departments_tenant_idx on departments (tenant_id, id)`.execute(db)

  await sql`
    create table users (
      id bigint primary key default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      username text not null,
      password_hash text not null,
      first_name text not null default '',
      last_name text not null default '',
      active boolean not null default true,
      active_derived boolean not null default false,
      group_account boolean not null default false,
      role_id bigint not null,
      lang_id text references languages (id),
      profile_picture text,
      street text, zipcode text, city text, email text, phone text,
      birthdate date, gender text, entering_date date, leaving_date date,
      staff_number text,
      wants_email_notifications boolean not null default false,
      default_route text,
      prevent_logout boolean not null default false,
      password_change_required boolean not null default false,
      logout_requested_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      deleted_at timestamptz,
      blacked_out_at timestamptz,
      unique (tenant_id, id),
      foreign key (tenant_id, role_id) references roles (tenant_id, id)
    )`.execute(db)
  // Usernames stay taken while soft-deleted; black-out frees them (contract 10).
  await sql`create unique index users_username_uniq on users (tenant_id, lower(username)) where blacked_out_at is null`.execute(
    db,
  )
  await sql`create index users_tenant_idx on users (tenant_id, id) where deleted_at is null`.execute(db)
  await sql`create index users_role_idx on users (tenant_id, role_id)`.execute(db)

  await sql`
    create table department_users (
      tenant_id bigint not null,
      department_id bigint not null,
      user_id bigint not null,
      primary key (tenant_id, department_id, user_id),
      foreign key (tenant_id, department_id) references departments (tenant_id, id) on delete cascade,
      foreign key (tenant_id, user_id) references users (tenant_id, id) on delete cascade
    )`.execute(db)
  await sql`create index department_users_user_idx on department_users (tenant_id, user_id)`.execute(db)

  await sql`
    create table access_tokens (
      id bigint primary key default nextval('global_id_seq'),
      tenant_id bigint not null,
      user_id bigint not null,
      token_hash bytea not null unique,
      device_name text,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      revoked_at timestamptz,
      foreign key (tenant_id, user_id) references users (tenant_id, id) on delete cascade
    )`.execute(db)
  await sql`create index access_tokens_user_idx on access_tokens (tenant_id, user_id)`.execute(db)

  await sql`
    create table login_failures (
      id bigint generated always as identity primary key,
      tenant_slug text not null,
      username text not null,
      attempted_at timestamptz not null default now()
    )`.execute(db)
  await sql`create index login_failures_key_idx on login_failures (tenant_slug, username, attempted_at)`.execute(db)

  // Restriction grants (contract 00 §6). target_entity_id is text: shared items have UUID ids.
  await sql`
    create table entity_permissions (
      id bigint primary key default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      key text not null,
      permission_entity text not null check (permission_entity in ('user', 'role', 'department')),
      permission_entity_id bigint not null,
      target_entity text not null,
      target_entity_id text not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (tenant_id, target_entity, target_entity_id, key, permission_entity, permission_entity_id)
    )`.execute(db)
  await sql`create index entity_permissions_grantee_idx on entity_permissions (tenant_id, permission_entity, permission_entity_id)`.execute(
    db,
  )

  await sql`
    create table domain_events (
      id uuid primary key default gen_random_uuid(),
      tenant_id bigint not null references tenants (id) on delete cascade,
      type text not null,
      occurred_at timestamptz not null default now(),
      actor_id bigint,
      subject_type text not null,
      subject_id text not null,
      data jsonb not null default '{}'
    )`.execute(db)
  await sql`create index domain_events_tenant_idx on domain_events (tenant_id, occurred_at)`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
