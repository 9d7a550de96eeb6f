/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only.
// The per-host bound of outbound deliveries (webhooks, and any later channel) holds for the whole fleet, not per worker process: a delivery
// leases one of the host's N slots for as long as it runs (at most the delivery timeout, then the lease
// lapses, so a killed worker's slot frees itself). Not tenant data: hosts are shared by tenants.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table outbound_host_leases (
      host text not null,
      slot int not null,
      holder text not null,
      leased_until timestamptz not null,
      primary key (host, slot)
    )`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
