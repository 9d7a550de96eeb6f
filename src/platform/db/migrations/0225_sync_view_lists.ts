import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<unknown>`: the schema type moves on without them.
// A client view (issue 43, docs/decisions/0024-sync-feed.md, decision 4) was one jsonb of every id a
// device holds (entity → ids: megabytes for a user who sees the 100,000-user directory). A sync after
// one change had to detoast all of it to learn whether the changed record was held. Now a view keeps one
// list per entity: such a sync reads only the lists of the changed records' entities (a user's
// notifications: a few dozen ids), still compressed, a few bytes an id.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create table sync_view_lists (
    tenant_id bigint not null references tenants (id) on delete cascade,
    view_id bigint not null,
    user_id bigint not null,
    entity text not null,
    ids jsonb not null,
    primary key (tenant_id, view_id, entity)
  )`.execute(db)
  await sql`insert into sync_view_lists (tenant_id, view_id, user_id, entity, ids)
    select v.tenant_id, v.id, v.user_id, e.key, e.value from sync_views v cross join lateral jsonb_each(v.items) e`.execute(
    db,
  )
  await sql`alter table sync_views drop column items`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
