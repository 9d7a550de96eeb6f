import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// The tenant's works-council setting for reading data (issue 41, docs/decisions/reach-detail.md) moves
// out of `tenants.settings` into a table of its own, distributed by tenant: `tenants` is a reference
// table on Citus, where every write to it is a two-phase commit on every node. No row = `named`.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table reading_settings (
      tenant_id bigint not null references tenants (id) on delete cascade,
      reach_detail text not null check (reach_detail in ('named', 'counts_only')),
      updated_at timestamptz not null default now(),
      primary key (tenant_id)
    )`.execute(db)
  await sql`
    insert into reading_settings (tenant_id, reach_detail)
    select id, settings ->> 'reach_detail' from tenants where settings ->> 'reach_detail' in ('named', 'counts_only')`.execute(
    db,
  )
  await sql`update tenants set settings = settings - 'reach_detail' where settings ? 'reach_detail'`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
