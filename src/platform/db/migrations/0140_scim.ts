import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// SCIM 2.0 provisioning (src/modules/scim, docs/scim.md): bearer tokens of identity providers, the
// `externalId` an identity provider gives users and groups (departments), the audit record's actor
// label ("scim:<token id>") and the indexes the SCIM filters of provisioning clients need.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table scim_tokens (
      id bigint not null default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      name text not null,
      token_hash bytea not null,
      default_role_id bigint not null,
      created_by bigint,
      created_at timestamptz not null default now(),
      revoked_at timestamptz,
      primary key (tenant_id, id),
      unique (tenant_id, token_hash)
    )`.execute(db)
  await sql`alter table users add column external_id text`.execute(db)
  await sql`alter table departments add column external_id text`.execute(db)
  await sql`create index users_external_id_idx on users (tenant_id, external_id) where external_id is not null`.execute(
    db,
  )
  await sql`create index departments_external_id_idx on departments (tenant_id, external_id) where external_id is not null`.execute(
    db,
  )
  // userName co/sw/ew (SCIM filters are case-insensitive for userName): trigrams of the lower-cased name
  await sql`create index users_username_lower_trgm on users using gin (lower(username) gin_trgm_ops)`.execute(db)
  await sql`create index departments_name_lower_idx on departments (tenant_id, lower(name))`.execute(db)
  // who made a change when it was no user: "scim:<token id>" (actor_id stays null then)
  await sql`alter table audit_log add column actor text`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
