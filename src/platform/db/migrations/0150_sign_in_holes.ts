import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// Sign-in holes (issue 39, docs/sign-in.md): the tenant's OpenID Connect settings say whether a
// verified email may link an identity provider's account to an existing local one, and which
// `amr`/`acr` values of an ID token count as multi-factor authentication at the provider.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table oidc_providers add column link_by_verified_email boolean not null default false`.execute(db)
  await sql`alter table oidc_providers add column mfa_amr_values text[] not null
    default '{mfa,otp,hwk,swk,fido,sc}'`.execute(db)
  await sql`alter table oidc_providers add column mfa_acr_values text[] not null default '{}'`.execute(db)
  // /start is throttled per tenant and client address (the address is in the state's data)
  await sql`create index auth_tickets_state_ip_idx on auth_tickets (tenant_id, (data->>'ip'), created_at)
    where kind = 'oidc_state'`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
