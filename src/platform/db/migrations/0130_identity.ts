import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// Enterprise sign-in (issue 34): sessions, password reset, TOTP, OIDC single sign-on. Every table is a
// tenant table keyed by tenant_id (docs/citus.md) and references only `tenants (id)`; rows pointing at
// a user or token are cleaned up by the app (users are never deleted apart from their tenant).
export async function up(db: Kysely<unknown>): Promise<void> {
  // what a token was issued to and when it was last used (written at most once a minute per token);
  // kept apart from access_tokens so that a use never invalidates cached actors (db/change-notices.ts)
  await sql`
    create table session_activity (
      tenant_id bigint not null references tenants (id) on delete cascade,
      token_id bigint not null,
      user_id bigint not null,
      created_at timestamptz not null default now(),
      last_used_at timestamptz,
      user_agent text,
      ip text,
      primary key (tenant_id, token_id)
    )`.execute(db)

  // single-use, short-lived secrets of a sign-in flow, stored hashed (SHA-256):
  // `password_reset`, `mfa` (an MFA challenge after the password), `login_code` (after SSO),
  // `oidc_state` (an authorization request in flight; `data` holds nonce, sealed PKCE verifier, redirect)
  await sql`
    create table auth_tickets (
      id bigint not null default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      kind text not null check (kind in ('password_reset', 'mfa', 'login_code', 'oidc_state')),
      user_id bigint,
      token_hash bytea not null,
      data jsonb not null default '{}',
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      used_at timestamptz,
      primary key (tenant_id, id),
      unique (tenant_id, token_hash)
    )`.execute(db)
  await sql`create index auth_tickets_user_idx on auth_tickets (tenant_id, user_id, kind, created_at)`.execute(db)

  // password reset requests per client address (throttling; the login asked for is not kept)
  await sql`
    create table password_reset_requests (
      id bigint not null default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      ip text not null,
      created_at timestamptz not null default now(),
      primary key (tenant_id, id)
    )`.execute(db)
  await sql`create index password_reset_requests_ip_idx on password_reset_requests (tenant_id, ip, created_at)`.execute(
    db,
  )

  // TOTP (RFC 6238): the secret sealed (secrets/secret-box.ts), recovery codes as SHA-256 hex
  await sql`
    create table user_totp (
      tenant_id bigint not null references tenants (id) on delete cascade,
      user_id bigint not null,
      secret text not null,
      enabled_at timestamptz,
      last_step bigint not null default 0,
      failed_attempts int not null default 0,
      locked_until timestamptz,
      recovery_codes text[] not null default '{}',
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, user_id)
    )`.execute(db)

  await sql`alter table roles add column requires_mfa boolean not null default false`.execute(db)
  // a token issued to a user whose role requires MFA before enrolling: it can only enroll
  await sql`alter table access_tokens add column mfa_enrollment_only boolean not null default false`.execute(db)

  // one OpenID provider per tenant; client_secret sealed
  await sql`
    create table oidc_providers (
      tenant_id bigint not null references tenants (id) on delete cascade,
      issuer text not null,
      client_id text not null,
      client_secret text not null,
      scopes text not null,
      username_claim text not null,
      email_claim text,
      provisioning text not null check (provisioning in ('off', 'create')),
      default_role_id bigint,
      allowed_email_domains text[] not null default '{}',
      password_login boolean not null default true,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id)
    )`.execute(db)

  // a user's link to an identity at an OpenID provider (issuer, sub)
  await sql`
    create table oidc_identities (
      id bigint not null default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      user_id bigint not null,
      issuer text not null,
      subject text not null,
      created_at timestamptz not null default now(),
      primary key (tenant_id, id),
      unique (tenant_id, issuer, subject)
    )`.execute(db)
  await sql`create index oidc_identities_user_idx on oidc_identities (tenant_id, user_id)`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
