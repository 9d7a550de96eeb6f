import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// Client views of the change feed stored as rows (issue 43, docs/decisions/0024-sync-feed.md, decision 4):
// a view was one jsonb of every id the client holds (megabytes, copied per cursor). Now a device's
// views of one snapshot form a chain; each held id is a row of the chain with the view that added it
// and the one that removed it (null while held). The view `v` of a chain: rows added in a view ≤ v and
// not removed in one ≤ v. A new view writes only the ids that came and went. Existing views become
// chains of one view each, so their cursors continue.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table sync_view_items (
    tenant_id bigint not null references tenants (id) on delete cascade,
    chain bigint not null,
    entity text not null,
    entity_id text not null,
    added_in bigint not null,
    removed_in bigint,
    primary key (tenant_id, chain, entity, entity_id, added_in)
  )`.execute(db)
  // pruning finds the rows no kept view holds any more without reading the held ones
  await sql`create index sync_view_items_removed_idx on sync_view_items (tenant_id, chain, removed_in)
    where removed_in is not null`.execute(db)
  await sql`alter table sync_views add column chain bigint`.execute(db)
  await sql`update sync_views set chain = id`.execute(db)
  await sql`alter table sync_views alter column chain set not null`.execute(db)
  await sql`insert into sync_view_items (tenant_id, chain, entity, entity_id, added_in)
    select v.tenant_id, v.id, e.key, x.id, v.id
    from sync_views v cross join lateral jsonb_each(v.items) e cross join lateral jsonb_array_elements_text(e.value) x(id)
    on conflict do nothing`.execute(db)
  await sql`alter table sync_views drop column items`.execute(db)
  await sql`create index sync_views_chain_idx on sync_views (tenant_id, chain, id)`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
