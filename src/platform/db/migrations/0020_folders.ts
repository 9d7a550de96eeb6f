/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<any>` because the schema type moves on without them.
export async function up(db: Kysely<any>): Promise<void> {
  // `path` = ids of every ancestor, root first, then the folder itself. Maintained by the folders
  // service on create and move; the GIN index answers "every folder under X" (`path && array[X]`),
  // which is what tree visibility and recursive delete need (docs/decisions/folders-tree-visibility.md).
  await sql`
    create table folders (
      id bigint primary key default nextval('global_id_seq'),
      tenant_id bigint not null references tenants (id) on delete cascade,
      type text not null check (type in ('department', 'form', 'infoboardChannel', 'report', 'reportDefinition',
        'role', 'survey', 'taskAssignment', 'taskTemplate')),
      parent_id bigint,
      lang_id text not null references languages (id),
      icon_id bigint,
      show_on_menu boolean not null default false,
      user_id bigint,
      path bigint[] not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (tenant_id, id),
      foreign key (tenant_id, parent_id) references folders (tenant_id, id),
      foreign key (tenant_id, user_id) references users (tenant_id, id) on delete set null (user_id),
      check (path[array_length(path, 1)] = id)
    )`.execute(db)
  await sql`create index folders_tenant_type_idx on folders (tenant_id, type, id)`.execute(db)
  await sql`create index folders_tenant_parent_idx on folders (tenant_id, parent_id)`.execute(db)
  await sql`create index folders_path_idx on folders using gin (path)`.execute(db)

  await sql`
    create table folder_translations (
      tenant_id bigint not null,
      folder_id bigint not null,
      lang_id text not null references languages (id),
      name text not null check (char_length(name) between 1 and 255),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant_id, folder_id, lang_id),
      foreign key (tenant_id, folder_id) references folders (tenant_id, id) on delete cascade
    )`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
