/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. Platform JWS signing keys (webhook jwt auth, later grant tokens).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table signing_keys (
      kid text primary key,
      alg text not null,
      public_jwk jsonb not null,
      private_jwk jsonb not null,
      created_at timestamptz not null default now(),
      retired_at timestamptz
    )`.execute(db)
  // exactly one current key
  await sql`create unique index signing_keys_current_idx on signing_keys ((true)) where retired_at is null`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
