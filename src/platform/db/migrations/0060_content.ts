/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely's migration convention: a migration is frozen, so it must not be typed by today's Database */
import { type Kysely, sql } from 'kysely'

// Frozen: migrations are forward-only. `Kysely<any>` because the schema type moves on without them.
// The content modules of contract 30. Every table: tenant-keyed, ids from the global sequence,
// `user_id` = author (kept as null when the user row goes), indexes leading with tenant_id.
// Folder columns carry no foreign key: folder deletion detaches them (registerFolderReference).
const common = sql`
  id bigint primary key default nextval('global_id_seq'),
  tenant_id bigint not null references tenants (id) on delete cascade,
  user_id bigint,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (tenant_id, id),
  foreign key (tenant_id, user_id) references users (tenant_id, id) on delete set null (user_id)`

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table calendar_events (${common},
    title text not null, starts_at timestamptz not null, ends_at timestamptz not null, check (ends_at >= starts_at))`.execute(
    db,
  )

  await sql`create table filemanager_directories (${common},
    name text not null, parent_id bigint,
    foreign key (tenant_id, parent_id) references filemanager_directories (tenant_id, id))`.execute(db)
  await sql`create index filemanager_directories_parent_idx on filemanager_directories (tenant_id, parent_id)`.execute(
    db,
  )

  // storage_name / poster_storage_name: random names under STORAGE_DIR/filemanager/<tenant>; never output.
  await sql`create table filemanager_files (${common},
    name text not null, directory_id bigint, size bigint not null, media_type text not null,
    has_poster boolean not null default false, storage_name text not null, poster_storage_name text,
    foreign key (tenant_id, directory_id) references filemanager_directories (tenant_id, id))`.execute(db)
  await sql`create index filemanager_files_directory_idx on filemanager_files (tenant_id, directory_id)`.execute(db)

  await sql`create table forms (${common}, name text not null, folder_id bigint)`.execute(db)
  await sql`create index forms_folder_idx on forms (tenant_id, folder_id)`.execute(db)
  await sql`create table form_messages (${common}, form_id bigint not null, data jsonb not null default '{}'::jsonb,
    foreign key (tenant_id, form_id) references forms (tenant_id, id) on delete cascade)`.execute(db)
  await sql`create index form_messages_form_idx on form_messages (tenant_id, form_id, id)`.execute(db)

  await sql`create table infoboard_posts (${common}, channel_id bigint, title text not null, body text not null,
    requires_reading_confirmation boolean not null default false)`.execute(db)
  await sql`create index infoboard_posts_channel_idx on infoboard_posts (tenant_id, channel_id)`.execute(db)
  await sql`create table infoboard_comments (${common}, post_id bigint not null, body text not null,
    foreign key (tenant_id, post_id) references infoboard_posts (tenant_id, id) on delete cascade)`.execute(db)
  await sql`create index infoboard_comments_post_idx on infoboard_comments (tenant_id, post_id, id)`.execute(db)

  await sql`create table manual_chapters (${common}, title text not null)`.execute(db)
  await sql`create table manual_entries (${common}, chapter_id bigint not null, title text not null, body text not null,
    foreign key (tenant_id, chapter_id) references manual_chapters (tenant_id, id) on delete cascade)`.execute(db)
  await sql`create index manual_entries_chapter_idx on manual_entries (tenant_id, chapter_id, id)`.execute(db)

  await sql`create table task_executions (${common}, title text not null, folder_id bigint,
    due_at timestamptz, done_at timestamptz)`.execute(db)
  await sql`create index task_executions_folder_idx on task_executions (tenant_id, folder_id)`.execute(db)
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only')
}
