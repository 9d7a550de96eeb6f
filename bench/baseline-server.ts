/**
 * The raw baseline (contract 90): plain Fastify + pg, no auth, no conventions, no access module,
 * answering each scenario's request with the same rows by hand-written SQL. It is the fastest this
 * stack can serve that exact answer; the API is measured as a ratio to it.
 */
import Fastify from 'fastify'
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT } from 'jose'
import { runMigrations } from 'graphile-worker'
import pg from 'pg'

const rawPool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: 20,
  options: '-c TimeZone=UTC -c jit=off',
})
// prepared (named) statements, as the API uses: the baseline must be the fastest way to the same answer
const names = new Map<string, string>()
const pool = {
  query(text: string, values: unknown[] = []) {
    let name = names.get(text)
    if (!name) names.set(text, (name = `b${names.size}`))
    return rawPool.query({ name, text, values })
  },
}
/** A transaction on one connection, with the same named statements. */
async function transaction<T>(
  work: (query: (text: string, values?: unknown[]) => Promise<pg.QueryResult>) => Promise<T>,
): Promise<T> {
  const client = await rawPool.connect()
  const query = (text: string, values: unknown[] = []) => {
    let name = names.get(text)
    if (!name) names.set(text, (name = `b${names.size}`))
    return client.query({ name, text, values })
  }
  try {
    await client.query('begin')
    const result = await work(query)
    await client.query('commit')
    return result
  } catch (error) {
    await client.query('rollback').catch(() => undefined)
    throw error
  } finally {
    client.release()
  }
}
// the API's APP_URL and BASE_URL (the harness passes them), for the same Location headers
const appUrl = (process.env.APP_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '')
const baseUrl = (process.env.BASE_URL ?? appUrl).replace(/\/+$/, '')
const ts = (column: string) => `to_char(${column}, 'YYYY-MM-DD HH24:MI:SS')`
const BASIC = `id, username, first_name, last_name, trim(first_name || ' ' || last_name) as full_name, active, group_account, role_id, lang_id,
  profile_picture, ${ts('created_at')} as created_at, ${ts('updated_at')} as updated_at, ${ts('deleted_at')} as deleted_at, ${ts('blacked_out_at')} as blacked_out_at`
const EXTENDED = `street, zipcode, city, email, phone, ${ts('birthdate')} as birthdate, gender, ${ts('entering_date')} as entering_date,
  ${ts('leaving_date')} as leaving_date, staff_number, wants_email_notifications, default_route, prevent_logout`
const NOTIFICATION = `id, type, notifiable_type, notifiable_id::int, targetable_type, targetable_id::int, data, ${ts('seen_at')} as seen_at,
  ${ts('read_at')} as read_at, ${ts('created_at')} as created_at, ${ts('updated_at')} as updated_at`

const app = Fastify({ logger: false })
const q = (request: { query: unknown }) => request.query as Record<string, string>

app.get('/floor', async () => ({ status: 'ok' }))
// S1 / S9: one user by primary key
app.get('/users/:id', async (request) => {
  const { rows } = await pool.query(`select ${BASIC}, ${EXTENDED} from users where tenant_id = $1 and id = $2`, [
    q(request).tenant,
    (request.params as { id: string }).id,
  ])
  return rows[0]
})
// S6: text search, first 100
app.get('/users', async (request) => {
  const pattern = `%${q(request).text}%`
  const { rows } = await pool.query(
    `select ${BASIC} from users where tenant_id = $1 and deleted_at is null
       and (username ilike $2 or first_name ilike $2 or last_name ilike $2 or trim(first_name || ' ' || last_name) ilike $2 or email ilike $2 or staff_number ilike $2)
     order by id limit 100`,
    [q(request).tenant, pattern],
  )
  return rows
})
// S2: unread count
app.get('/notifications/count', async (request) => {
  const { rows } = await pool.query(
    'select count(*)::int as n from notifications where tenant_id = $1 and notifiable_id = $2 and read_at is null',
    [q(request).tenant, q(request).user],
  )
  return rows[0].n
})
// S18: an idle sync, the equivalent indexed read: the tenant's change clock (nothing newer than the cursor)
app.get('/sync/idle', async (request) => {
  const { rows } = await pool.query('select version, horizon from sync_clocks where tenant_id = $1', [
    q(request).tenant,
  ])
  return { changes: [], cursor: String(rows[0]?.version ?? 0), has_more: false }
})
// S3: first page of notifications
app.get('/notifications', async (request) => {
  const { rows } = await pool.query(
    `select ${NOTIFICATION} from notifications where tenant_id = $1 and notifiable_id = $2
    order by created_at desc nulls last, id desc nulls last limit 50`,
    [q(request).tenant, q(request).user],
  )
  return rows
})
// S7: mark one notification read
app.put('/notifications/:id', async (request) => {
  const { rows } = await pool.query(
    `update notifications set read_at = now(), seen_at = coalesce(seen_at, now()), updated_at = now()
    where tenant_id = $1 and notifiable_id = $2 and id = $3 returning ${NOTIFICATION}`,
    [q(request).tenant, q(request).user, (request.params as { id: string }).id],
  )
  return { status: 'success', data: rows[0] }
})

// the access rule written out by hand: a target with K grants admits only their grantees (one
// aggregate probe per target row: no grant → null → visible; the fastest form, as the API uses)
const grantOk = (alias: string, idExpr: string) => `((
  select bool_or((ep.permission_entity = 'user' and ep.permission_entity_id = $2) or (ep.permission_entity = 'role' and ep.permission_entity_id = u.role_id)
      or (ep.permission_entity = 'department' and ep.permission_entity_id in (select department_id from department_users du where du.tenant_id = $1 and du.user_id = $2)))
  from entity_permissions ep where ep.tenant_id = $1 and ep.target_entity = '${alias}' and ep.target_entity_id = (${idExpr})::text and ep.key = 'view') is not false)`

// S4: first 50 shared items the user may view
app.get('/shared-items', async (request) => {
  const { rows } = await pool.query(
    `select si.id, si.user_id::int, si.type, si.redirect_type, si.targetable_type, si.targetable_id::int as targetable_id, si.config,
      'http://127.0.0.1/shared/' || si.id as url, ${ts('si.created_at')} as created_at, ${ts('si.updated_at')} as updated_at, ${ts('si.deleted_at')} as deleted_at
    from shared_items si, users u where u.tenant_id = $1 and u.id = $2 and si.tenant_id = $1 and si.deleted_at is null and ${grantOk('sharedItem', 'si.id')}
    order by si.id limit 50`,
    [q(request).tenant, q(request).user],
  )
  return rows
})
// S5 (and S5-limit50 with `limit`): visible folders of a type: no folder on the path may carry view grants that exclude the user
app.get('/folders', async (request) => {
  const limit = q(request).limit
  const { rows } = await pool.query(
    `select f.id::int, f.type, f.parent_id::int, f.lang_id,
      (select t.name from folder_translations t where t.tenant_id = f.tenant_id and t.folder_id = f.id order by (t.lang_id = f.lang_id) desc limit 1) as name,
      f.icon_id, f.show_on_menu, f.user_id, ${ts('f.created_at')} as created_at, ${ts('f.updated_at')} as updated_at
    from folders f, users u where u.tenant_id = $1 and u.id = $2 and f.tenant_id = $1 and f.type = $3
      and not exists (select 1 from unnest(f.path) as a(fid) where not ${grantOk('folder', 'a.fid')})
    order by f.id${limit ? ' limit $4' : ''}`,
    [q(request).tenant, q(request).user, q(request).type, ...(limit ? [Number(limit)] : [])],
  )
  return rows
})
// S8: idempotent grant create
app.post('/entity-permissions', async (request, reply) => {
  const b = request.body as Record<string, unknown>
  const inserted = await pool.query(
    `insert into entity_permissions (tenant_id, key, permission_entity, permission_entity_id, target_entity, target_entity_id)
    values ($1, $2, $3, $4, $5, $6) on conflict do nothing returning id`,
    [
      q(request).tenant,
      b.key,
      b.permission_entity,
      b.permission_entity_id,
      b.target_entity,
      String(b.target_entity_id),
    ],
  )
  const { rows } = await pool.query(
    `select id::int, key, permission_entity, permission_entity_id::int, target_entity, target_entity_id::int,
      ${ts('created_at')} as created_at, ${ts('updated_at')} as updated_at from entity_permissions
    where tenant_id = $1 and target_entity = $2 and target_entity_id = $3 and key = $4 and permission_entity = $5 and permission_entity_id = $6`,
    [
      q(request).tenant,
      b.target_entity,
      String(b.target_entity_id),
      b.key,
      b.permission_entity,
      b.permission_entity_id,
    ],
  )
  return reply.code(inserted.rowCount ? 201 : 200).send(rows[0])
})

// S10 / S11: the share access log, buffered and written in one statement every 200 ms (as the API does)
let accesses: unknown[][] = []
setInterval(() => {
  if (accesses.length === 0) return
  const batch = accesses
  accesses = []
  const column = (i: number) => batch.map((a) => a[i])
  pool
    .query(
      `insert into shared_item_accesses (tenant_id, shared_item_id, user_id, outcome, url_type)
    select * from unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[])`,
      [column(0), column(1), column(2), column(3), column(4)],
    )
    .catch(() => undefined)
}, 200).unref()
// the module permission and the target's view grants (administrators bypass both), as content targets decide
const canViewContent = (module: string, alias: string, idExpr: string) =>
  `('*' = any(r.permissions) or ('${module}.view' = any(r.permissions) and ${grantOk(alias, idExpr)}))`
const itemVisible = `('*' = any(r.permissions) or ${grantOk('sharedItem', 'si.id')})`
// S10: the stable URL of a `redirect` item pointing at a calendar event the user may view: 302 to the app URL
app.get('/shared/calendar-event/:id', async (request, reply) => {
  const { tenant, user } = q(request)
  const id = (request.params as { id: string }).id
  const { rows } = await pool.query(
    `select si.redirect_type, e.id::text as target_id, ${canViewContent('calendar', 'calendarEvent', 'e.id')} as can_view
    from users u join roles r on r.tenant_id = u.tenant_id and r.id = u.role_id
      join shared_items si on si.tenant_id = $1 and si.id = $3::uuid and si.deleted_at is null
      left join calendar_events e on e.tenant_id = $1 and si.targetable_id ~ '^[1-9][0-9]{0,15}$' and e.id = si.targetable_id::bigint
    where u.tenant_id = $1 and u.id = $2 and ${itemVisible}`,
    [tenant, user, id],
  )
  const row = rows[0]
  const access = (outcome: string) => accesses.push([tenant, id, user, outcome, null])
  if (!row) return (access('not_found'), reply.code(404).send({ status: 404, title: 'Shared item not found' }))
  if (!row.target_id) return reply.code(404).send({ status: 404, code: 'target_not_found' })
  if (!row.can_view) return (access('denied'), reply.code(403).send({ status: 403, code: 'target_not_accessible' }))
  access('redirected')
  return reply.header('cache-control', 'no-store').redirect(`${appUrl}/calendar/events/${row.target_id}`, 302)
})
// S11: a `redirectWithGrantToken` item on a file, `?downloadFileContent=1`: 302 to the download URL with a
// grant token signed per request (ES256 on a P-256 key, the API's algorithm and claims; the key stays in memory)
const signing = await (async () => {
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  return { privateKey, kid: await calculateJwkThumbprint(await exportJWK(publicKey), 'sha256') }
})()
app.get('/shared/file/:id', async (request, reply) => {
  const { tenant, user } = q(request)
  const id = (request.params as { id: string }).id
  const { rows } = await pool.query(
    `select si.id, si.redirect_type, f.id::text as target_id, t.slug
    from users u join roles r on r.tenant_id = u.tenant_id and r.id = u.role_id
      join tenants t on t.id = u.tenant_id
      join shared_items si on si.tenant_id = $1 and si.id = $3::uuid and si.deleted_at is null
      left join filemanager_files f on f.tenant_id = $1 and si.targetable_id ~ '^[1-9][0-9]{0,15}$' and f.id = si.targetable_id::bigint
    where u.tenant_id = $1 and u.id = $2 and ${itemVisible}`,
    [tenant, user, id],
  )
  const row = rows[0]
  if (!row)
    return (
      accesses.push([tenant, id, user, 'not_found', 'downloadFileContent']),
      reply.code(404).send({ status: 404, title: 'Shared item not found' })
    )
  if (!row.target_id || row.redirect_type !== 'redirectWithGrantToken')
    return reply.code(404).send({ status: 404, code: 'target_not_found' })
  const iat = Math.floor(Date.now() / 1000)
  const token = await new SignJWT({
    tid: row.slug,
    sid: row.id,
    tgt: `filemanagerFile:${row.target_id}`,
    scope: ['view'],
  })
    .setProtectedHeader({ alg: 'ES256', kid: signing.kid, typ: 'JWT' })
    .setIssuer(baseUrl)
    .setSubject(String(user))
    .setIssuedAt(iat)
    .setExpirationTime(iat + 300)
    .sign(signing.privateKey)
  const url = new URL(`${baseUrl}/api/filemanager/files/${row.target_id}/download`)
  url.searchParams.set('grant_token', token)
  accesses.push([tenant, id, user, 'grant_token_issued', 'downloadFileContent'])
  return reply.header('cache-control', 'no-store').redirect(url.toString(), 302)
})
// S12: create a shared item with its direct grants in one transaction (the target must exist)
app.post('/shared-items', async (request, reply) => {
  const { tenant, user } = q(request)
  const b = request.body as {
    type: string
    redirect_type?: string
    targetable_type: string
    targetable_id: number
    entity_permissions?: Array<{ key?: string; permission_entity: string; permission_entity_id: number }>
  }
  const grants = b.entity_permissions ?? []
  const item = await transaction(async (query) => {
    const { rows } = await query(
      `insert into shared_items (tenant_id, user_id, type, redirect_type, targetable_type, targetable_id, config)
        select $1, $2, $3, $4, $5, $6, '{}' where exists (select 1 from calendar_events where tenant_id = $1 and id = $6::text::bigint)
      returning id, user_id::int, type, redirect_type, targetable_type, targetable_id::int as targetable_id, config,
        '${baseUrl}/shared/' || id as url, ${ts('created_at')} as created_at, ${ts('updated_at')} as updated_at, ${ts('deleted_at')} as deleted_at`,
      [tenant, user, b.type, b.redirect_type ?? 'redirect', b.targetable_type, String(b.targetable_id)],
    )
    if (!rows[0]) return undefined
    await query(
      `insert into entity_permissions (tenant_id, key, permission_entity, permission_entity_id, target_entity, target_entity_id)
      select $1, k, e, i, 'sharedItem', $2 from unnest($3::text[], $4::text[], $5::bigint[]) as g(k, e, i) on conflict do nothing`,
      [
        tenant,
        rows[0].id,
        grants.map((g) => g.key ?? 'view'),
        grants.map((g) => g.permission_entity),
        grants.map((g) => g.permission_entity_id),
      ],
    )
    return rows[0]
  })
  if (!item) return reply.code(422).send({ status: 422, errors: [{ field: 'targetable_id' }] })
  return reply.code(201).send(item)
})
// S14: a notification to one user: the record and a delivery job (graphile-worker's own add_job) in one
// transaction. The jobs go to a queue schema of their own that no worker runs: they cost no worker CPU,
// and, piling up unrun, they do not lengthen the API's job fetches (its worker's index scan walked past
// every one of them in the shared schema: 1.4 ms per fetch, the largest statement cost of S14)
// named by the harness (bench/run.ts), which also empties it after S14
const jobSchema = process.env.BASELINE_JOB_SCHEMA
if (!jobSchema || !/^[a-z_]+$/.test(jobSchema))
  throw new Error("BASELINE_JOB_SCHEMA (lower-case letters and _) must name the baseline's job schema")
await runMigrations({ connectionString: process.env.DATABASE_URL, schema: jobSchema })
app.post('/notifications', async (request, reply) => {
  const { tenant, user } = q(request)
  const b = request.body as { title: string; body: string; url: string; user_ids: number[] }
  await transaction(async (query) => {
    const { rows } = await query(
      `insert into notifications (tenant_id, type, notifiable_type, notifiable_id, targetable_type, targetable_id, source_key, data)
      values ($1, 'genericNotification', 'user', $2, 'genericNotification', 0, 'bench-baseline:' || gen_random_uuid(), jsonb_build_object('title', $3::text, 'body', $4::text, 'url', $5::text))
      returning id`,
      [tenant, b.user_ids[0] ?? user, b.title, b.body, b.url],
    )
    await query(
      `select ${jobSchema}.add_job('bench:baseline_delivery', json_build_object('tenantId', $1::bigint, 'notificationId', $2::uuid))`,
      [tenant, rows[0].id],
    )
  })
  return reply.code(202).send({ status: 'success', data: null })
})

// A post the user may view, written out by hand as the API's rule does it: the module permission and
// the post's own grants, its channel (no folder on the channel's path may carry view grants that exclude
// the user) and, unless the user is an editor, published (S15 and S16 are for readers: published only)
const postVisible = (alias: string) => `${canViewContent('infoboard', 'infoboardPost', `${alias}.id`)}
  and ${alias}.published_at <= now()
  and not exists (select 1 from folders f, unnest(f.path) as a(fid)
    where f.tenant_id = $1 and f.id = ${alias}.channel_id and not ${grantOk('folder', 'a.fid')})`
// S15: confirm a post (again): the post must be one the user may view (a missing or hidden post is a 404,
// as in the API); a repeat is then one read, as in the API; the first an upsert, the reader's state back
// (an upsert on every repeat rewrote the row each time: its dead versions slowed the next scenario, S16,
// which probes the same user's rows, to a fifth)
app.post('/infoboard/posts/:id/confirmation', async (request, reply) => {
  // $2 is the user, as the access rule's fragments expect
  const values = [q(request).tenant, q(request).user, (request.params as { id: string }).id]
  const known = await pool.query(
    `select ${ts('cr.seen_at')} as seen_at, ${ts('cr.confirmed_at')} as confirmed_at
     from users u join roles r on r.tenant_id = u.tenant_id and r.id = u.role_id
       join infoboard_posts p on p.tenant_id = $1 and p.id = $3
       left join content_reads cr on cr.tenant_id = $1 and cr.target_type = 'infoboardPost' and cr.target_id = p.id and cr.user_id = $2
     where u.tenant_id = $1 and u.id = $2 and p.requires_reading_confirmation and ${postVisible('p')}`,
    values,
  )
  if (known.rows.length === 0) return reply.code(404).send({ status: 404, title: 'Post not found' })
  if (known.rows[0].confirmed_at !== null) return reply.code(200).send(known.rows[0])
  const { rows } = await pool.query(
    `insert into content_reads as cr (tenant_id, target_type, target_id, user_id, confirmed_at)
       values ($1, 'infoboardPost', $3, $2, now())
     on conflict (tenant_id, target_type, target_id, user_id) do update set confirmed_at = coalesce(cr.confirmed_at, now())
     returning ${ts('seen_at')} as seen_at, ${ts('confirmed_at')} as confirmed_at, confirmed_at = now() as created`,
    values,
  )
  const { created, ...state } = rows[0]
  return reply.code(created ? 201 : 200).send(state)
})
// S16: the posts the user still has to confirm (those she may view), pinned first, with her state
app.get('/infoboard/posts/pending', async (request) => {
  const { rows } = await pool.query(
    `select p.id, p.user_id, p.channel_id, p.title, p.body, p.requires_reading_confirmation, ${ts('p.published_at')} as published_at,
       p.pinned, p.comments_enabled, ${ts('p.confirmation_due_at')} as confirmation_due_at,
       ${ts('p.created_at')} as created_at, ${ts('p.updated_at')} as updated_at,
       json_build_object('seen_at', ${ts('cr.seen_at')}, 'confirmed_at', null) as my_state
     from users u join roles r on r.tenant_id = u.tenant_id and r.id = u.role_id
       join infoboard_posts p on p.tenant_id = $1
       left join content_reads cr on cr.tenant_id = p.tenant_id and cr.target_type = 'infoboardPost'
         and cr.target_id = p.id and cr.user_id = $2
     where u.tenant_id = $1 and u.id = $2 and p.requires_reading_confirmation and cr.confirmed_at is null and ${postVisible('p')}
     order by p.pinned desc, p.id desc limit 50`,
    [q(request).tenant, q(request).user],
  )
  return rows
})
// S17: the counts of a post every active user may read
app.get('/infoboard/posts/:id/reach', async (request) => {
  const values = [q(request).tenant, (request.params as { id: string }).id]
  const reads = `left join content_reads r on r.tenant_id = $1 and r.target_type = 'infoboardPost' and r.target_id = $2 and r.user_id = u.id`
  const audience = `users u where u.tenant_id = $1 and u.active and u.deleted_at is null and u.blacked_out_at is null and not u.group_account`
  const [totals, departments] = await Promise.all([
    pool.query(
      `select count(*)::int as audience, count(r.seen_at)::int as seen, count(r.confirmed_at)::int as confirmed,
         (count(*) - count(r.confirmed_at))::int as pending
       from ${audience.replace('users u where', `users u ${reads} where`)}`,
      values,
    ),
    pool.query(
      `select d.id, d.name, count(*)::int as audience, count(r.seen_at)::int as seen, count(r.confirmed_at)::int as confirmed,
         (count(*) - count(r.confirmed_at))::int as pending
       from users u join department_users du on du.tenant_id = $1 and du.user_id = u.id
         join departments d on d.tenant_id = $1 and d.id = du.department_id ${reads}
       where u.tenant_id = $1 and u.active and u.deleted_at is null and u.blacked_out_at is null and not u.group_account
       group by d.id, d.name order by d.name, d.id`,
      values,
    ),
  ])
  return {
    ...totals.rows[0],
    requires_reading_confirmation: true,
    reach_detail: 'named',
    by_department: departments.rows,
  }
})

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
process.stdout.write(`listening ${(app.server.address() as { port: number }).port}\n`)
// an orderly exit on the harness's SIGTERM, so `--cpu-prof` (BENCH_BASELINE_NODE_ARGS) writes its profile
process.once('SIGTERM', () => process.exit(0))
