import { sql } from 'kysely'
import type { Db } from '../src/platform/db/schema.js'
import { createTenant } from '../src/modules/tenants/index.js'
import { hashPassword } from '../src/platform/auth/passwords.js'
import { generateAccessToken, hashAccessToken, issueAccessToken } from '../src/platform/auth/tokens.js'
import { writeTenantLimits } from '../src/platform/limits/tenant-limits.js'

/**
 * How a bench tenant meets the fair-use limits (docs/limits.md), by BENCH_LIMITS: `exempt` (default) —
 * the operator's exemption, as `workplace limits set --tenant <slug> --exempt` sets it: the bench's load
 * is no tenant's fair use; `raised` — limits far above the load, so every request runs the whole limiter
 * (leases, headers, in-flight count) and its per-request cost shows in the ratios; `defaults` — none set.
 */
export type BenchLimits = 'exempt' | 'raised' | 'defaults'

const RAISED = 1_000_000_000
const RAISED_BUCKETS = { read: RAISED, write: RAISED, expensive: RAISED }
/** `raised`: every rate budget far above the load and no in-flight line (the connection bound is the default). */
export const RAISED_LIMITS = { token: RAISED_BUCKETS, tenant: RAISED_BUCKETS, max_in_flight: 100_000 }
/**
 * A tenant of the bench's size holds 100,000 users, the default users quota: its operator raises the quota,
 * as docs/limits.md tells one to (`workplace limits set --quota-users`), or SCIM's creations are refused
 * (`exempt` lifts rate and concurrency limits, not what a tenant may keep).
 */
export const BENCH_QUOTAS = { users: 1_000_000 }

export interface SeededTenant {
  slug: string
  tenantId: number
  adminId: number
  adminToken: string
  userId: number
  userToken: string
  counts: Record<string, number>
}

async function tableExists(db: Db, table: string): Promise<boolean> {
  const { rows } = await sql<{ ok: boolean }>`select to_regclass(${table}) is not null as ok`.execute(db)
  return rows[0].ok
}

/**
 * Seeds one tenant set-based (INSERT … SELECT generate_series), at `scale` (1 = full size):
 * 100,000 users in 200 departments, and — where the modules' tables exist — notifications,
 * folders, shared items and their grants. The benchmark user is a non-admin Employee.
 */
export async function seedTenant(
  db: Db,
  slug: string,
  scale: number,
  limits: BenchLimits = 'exempt',
): Promise<SeededTenant> {
  const n = (full: number) => Math.max(1, Math.round(full * scale))
  const created = await createTenant(db, { slug, adminPassword: 'bench-password', tokenTtlDays: 30 })
  const tenantId = created.tenant.id
  if (limits === 'exempt') await writeTenantLimits(db, tenantId, { quotas: BENCH_QUOTAS }, true)
  if (limits === 'raised') await writeTenantLimits(db, tenantId, { ...RAISED_LIMITS, quotas: BENCH_QUOTAS }, false)
  const passwordHash = await hashPassword('bench-password')
  const users = n(100_000)
  const departments = Math.max(2, n(200))
  const counts: Record<string, number> = { users, departments }

  await sql`insert into users (tenant_id, username, password_hash, first_name, last_name, role_id, lang_id, email, staff_number)
    select ${tenantId}, 'user' || g, ${passwordHash},
      (array['Anna','Ben','Chloe','Deniz','Emil','Fatma','Greta','Hannes','Ines','Jonas'])[1 + g % 10] || g % 97,
      (array['Schmidt','Miller','Dubois','Yilmaz','Rossi','Novak','Berg','Keller','Lang','Wolf'])[1 + (g / 10) % 10],
      ${created.roles.employeeId}, 'en-US', 'user' || g || '@example.com', 'S' || lpad(g::text, 6, '0')
    from generate_series(1, ${users}) g`.execute(db)
  await sql`insert into departments (tenant_id, name) select ${tenantId}, 'Department ' || g from generate_series(1, ${departments}) g`.execute(
    db,
  )
  await sql`insert into department_users (tenant_id, department_id, user_id)
    select u.tenant_id, d.ids[1 + (row_number() over (order by u.id)) % ${departments}], u.id
    from users u, (select array_agg(id order by id) ids from departments where tenant_id = ${tenantId}) d
    where u.tenant_id = ${tenantId} and u.username like 'user%'`.execute(db)

  const benchUser = await db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('username', '=', 'user1')
    .executeTakeFirstOrThrow()

  if (await tableExists(db, 'notifications')) {
    const total = n(2_000_000)
    counts.notifications = total
    // the benchmark user gets 500 (half unread); the rest spread over everyone
    await sql`insert into notifications (tenant_id, type, notifiable_type, notifiable_id, targetable_type, targetable_id, source_key, data, read_at, seen_at, created_at)
      select ${tenantId}, 'genericNotification', 'user',
        case when g <= 500 then ${benchUser.id} else ids.all_ids[1 + g % array_length(ids.all_ids, 1)] end,
        'genericNotification', g, 'bench:' || g, jsonb_build_object('title', 'Notice ' || g, 'body', '<p>Body ' || g || '</p>', 'url', '/notices/' || g),
        case when g % 2 = 0 then now() - make_interval(mins => g % 1000) end,
        case when g % 2 = 0 then now() - make_interval(mins => g % 1000) end,
        now() - make_interval(secs => g)
      from generate_series(1, ${total}) g,
        (select array_agg(id) as all_ids from users where tenant_id = ${tenantId} and id <> ${benchUser.id}) ids`
      .execute(db)
      .catch((error) => {
        counts.notifications = -1
        console.error('# seeding notifications skipped:', error.message)
      })
  }

  const employeeRole = created.roles.employeeId
  const otherRole = created.roles.administratorId

  if (await tableExists(db, 'folders')) {
    // 10,000 folders in 6 levels; children inherit their root's type; 10% carry view grants
    // (half to the benchmark user's role, half to another role, so both visible and hidden ones exist).
    // At least 1,000: the small data set must hold more than 50 visible form folders, so that
    // S5-limit50 compares answers of the same size (50 rows) across data sizes
    const total = Math.max(n(10_000), 1_000)
    const perLevel = Math.max(1, Math.floor(total / 6))
    counts.folders = perLevel * 6
    await sql`insert into folders (id, tenant_id, type, parent_id, lang_id, path)
      select x.id, ${tenantId}, (array['department','form','infoboardChannel','report','reportDefinition','role','survey','taskAssignment','taskTemplate'])[1 + x.g % 9],
        null, 'en-US', array[x.id]
      from (select nextval('global_id_seq') as id, g from generate_series(1, ${perLevel}) g) x`.execute(db)
    for (let level = 2; level <= 6; level++) {
      await sql`with parents as (
          select id, type, path, row_number() over (order by id) as rn from folders
          where tenant_id = ${tenantId} and array_length(path, 1) = ${level - 1}),
        fresh as (select nextval('global_id_seq') as id, g from generate_series(1, ${perLevel}) g)
        insert into folders (id, tenant_id, type, parent_id, lang_id, path)
        select f.id, ${tenantId}, p.type, p.id, 'en-US', p.path || f.id
        from fresh f join parents p on p.rn = 1 + f.g % (select count(*) from parents)`.execute(db)
    }
    await sql`insert into folder_translations (tenant_id, folder_id, lang_id, name)
      select tenant_id, id, 'en-US', 'Folder ' || id from folders where tenant_id = ${tenantId}`.execute(db)
    await sql`insert into entity_permissions (tenant_id, key, permission_entity, permission_entity_id, target_entity, target_entity_id)
      select ${tenantId}, 'view', 'role', case when id % 20 = 0 then ${employeeRole}::bigint else ${otherRole}::bigint end, 'folder', id::text
      from folders where tenant_id = ${tenantId} and id % 10 = 0`.execute(db)
  }

  let calendarEventIds = false
  if (await tableExists(db, 'calendar_events')) {
    // 50,000 content records: calendar events (the shared items point at them)
    counts.content = n(50_000)
    await sql`insert into calendar_events (tenant_id, user_id, title, starts_at, ends_at)
      select ${tenantId}, ${benchUser.id}, 'Event ' || g, now() + make_interval(hours => g), now() + make_interval(hours => g + 1)
      from generate_series(1, ${counts.content}) g`.execute(db)
    calendarEventIds = true
  }

  if (calendarEventIds && (await tableExists(db, 'shared_items'))) {
    // 100,000 shared items over the events; 10% carry view grants (half for the benchmark role)
    counts.shared_items = n(100_000)
    await sql`insert into shared_items (tenant_id, user_id, type, redirect_type, targetable_type, targetable_id, config)
      select ${tenantId}, ${benchUser.id}, 'calendarEvent', 'redirect', 'calendarEvent', e.ids[1 + g % array_length(e.ids, 1)]::text, '{}'
      from generate_series(1, ${counts.shared_items}) g,
        (select array_agg(id) ids from calendar_events where tenant_id = ${tenantId}) e`.execute(db)
    await sql`insert into entity_permissions (tenant_id, key, permission_entity, permission_entity_id, target_entity, target_entity_id)
      select ${tenantId}, 'view', 'role', case when n % 2 = 0 then ${employeeRole}::bigint else ${otherRole}::bigint end, 'sharedItem', id::text
      from (select id, row_number() over (order by created_at, id) as n from shared_items where tenant_id = ${tenantId}) s
      where n % 10 = 0`.execute(db)
  }

  if ((await tableExists(db, 'filemanager_files')) && (await tableExists(db, 'shared_items'))) {
    // 1,000 files (metadata only: S11 redirects to their download URL, it never reads the bytes), each
    // shared once as `redirectWithGrantToken` without grants (the type's default redirect)
    counts.files = n(1_000)
    await sql`insert into filemanager_files (tenant_id, user_id, name, size, media_type, storage_name)
      select ${tenantId}, ${benchUser.id}, 'file-' || g || '.pdf', 1000 + g, 'application/pdf', 'bench-' || g
      from generate_series(1, ${counts.files}) g`.execute(db)
    await sql`insert into shared_items (tenant_id, user_id, type, redirect_type, targetable_type, targetable_id, config)
      select ${tenantId}, ${benchUser.id}, 'filemanagerFile', 'redirectWithGrantToken', 'filemanagerFile', f.id::text, '{}'
      from filemanager_files f where f.tenant_id = ${tenantId}`.execute(db)
    counts.shared_items = (counts.shared_items ?? 0) + counts.files
  }

  if (await tableExists(db, 'content_reads')) {
    // issue 41: an open infoboard channel (everyone's audience) with 300 published posts, every
    // third asking for a confirmation; the "reach" post has everyone as its audience, half of them
    // saw it, a quarter confirmed it
    counts.posts = Math.max(30, n(300))
    const {
      rows: [channel],
    } = await sql<{ id: number }>`insert into folders (tenant_id, type, lang_id, path, id)
      select ${tenantId}, 'infoboardChannel', 'en-US', array[x.id], x.id from (select nextval('global_id_seq') as id) x
      returning id`.execute(db)
    await sql`insert into folder_translations (tenant_id, folder_id, lang_id, name) values (${tenantId}, ${channel.id}, 'en-US', 'Bench news')`.execute(
      db,
    )
    await sql`insert into infoboard_posts (tenant_id, user_id, channel_id, title, body, requires_reading_confirmation,
        published_at, published_notified_at, pinned)
      select ${tenantId}, ${created.admin.id}, ${channel.id}, case when g = 1 then 'Bench reach post' else 'Bench post ' || g end,
        '<p>Bench</p>', g % 3 = 1, now() - interval '1 hour', now() - interval '1 hour', g % 50 = 0
      from generate_series(1, ${counts.posts}) g`.execute(db)
    await sql`insert into content_reads (tenant_id, target_type, target_id, user_id, seen_at, confirmed_at)
      select ${tenantId}, 'infoboardPost', p.id, u.id, now(), case when u.id % 4 = 0 then now() end
      from users u, infoboard_posts p
      where u.tenant_id = ${tenantId} and p.tenant_id = ${tenantId} and p.title = 'Bench reach post' and u.id % 2 = 0`.execute(
      db,
    )
    // S15 repeats the benchmark user's confirmation of the first post asking for one (200, both sides)
    await sql`insert into content_reads (tenant_id, target_type, target_id, user_id, confirmed_at)
      select ${tenantId}, 'infoboardPost', p.id, ${benchUser.id}, now() from infoboard_posts p
      where p.tenant_id = ${tenantId} and p.requires_reading_confirmation and p.title <> 'Bench reach post'
      order by p.id limit 1`.execute(db)
  }

  const { token: adminToken } = await issueAccessToken(db, tenantId, created.admin.id, 30, 'bench')
  const { token: userToken } = await issueAccessToken(db, tenantId, benchUser.id, 30, 'bench')
  return { slug, tenantId, adminId: created.admin.id, adminToken, userId: benchUser.id, userToken, counts }
}

/**
 * Access tokens for the first `count` seeded users (`user1` …, the benchmark user first), set-based:
 * the realtime measurement (S13) opens streams as each of them.
 */
export async function seedUserTokens(
  db: Db,
  tenant: SeededTenant,
  count: number,
): Promise<Array<{ userId: number; token: string }>> {
  const { rows } = await sql<{
    id: string
  }>`select id from users where tenant_id = ${tenant.tenantId} and username like 'user%'
    order by id limit ${count}`.execute(db)
  const users = rows.map((r) => ({ userId: Number(r.id), token: generateAccessToken(tenant.tenantId) }))
  await sql`insert into access_tokens (tenant_id, user_id, token_hash, device_name, created_at, expires_at)
    select ${tenant.tenantId}, u, h, 'bench-stream', clock_timestamp(), now() + interval '30 days'
    from unnest(${users.map((u) => u.userId)}::bigint[], ${users.map((u) => hashAccessToken(u.token))}::bytea[]) as t(u, h)`.execute(
    db,
  )
  return users
}

/** The large tables of a seed: their secondary indexes are built once after the bulk inserts. */
export const BULK_TABLES = ['notifications', 'users', 'shared_items', 'calendar_events']

/**
 * Drops the secondary indexes of `tables` (constraints stay) and returns a function that rebuilds them
 * in parallel, then vacuums and analyzes: 4,000,000 notifications go in far faster without six
 * indexes to maintain per row. The rebuilt definitions are PostgreSQL's own (`pg_indexes.indexdef`),
 * so nothing drifts from the migrations. The vacuum is the one autovacuum would start on the freshly
 * loaded tables minutes into the run, taking a core from whichever side was being measured then.
 */
export async function deferSecondaryIndexes(db: Db, tables: string[]): Promise<() => Promise<void>> {
  const { rows } = await sql<{ indexname: string; indexdef: string }>`
    select i.indexname, i.indexdef from pg_indexes i
    where i.schemaname = current_schema() and i.tablename = any(${tables}::text[])
      and not exists (select 1 from pg_constraint c where c.conname = i.indexname and c.connamespace = to_regnamespace(i.schemaname))`.execute(
    db,
  )
  for (const index of rows) await sql`drop index ${sql.id(index.indexname)}`.execute(db)
  return async () => {
    await Promise.all(rows.map((index) => sql.raw(index.indexdef).execute(db)))
    await sql`vacuum (analyze)`.execute(db)
  }
}
