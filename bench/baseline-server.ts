/**
 * The raw baseline (contract 90): plain Fastify + pg, no auth, no conventions, no access module,
 * answering each scenario's request with the same rows by hand-written SQL. It is the fastest this
 * stack can serve that exact answer; the API is measured as a ratio to it.
 */
import Fastify from 'fastify'
import pg from 'pg'

const rawPool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20, options: '-c TimeZone=UTC -c jit=off' })
// prepared (named) statements, as the API uses: the baseline must be the fastest way to the same answer
const names = new Map<string, string>()
const pool = {
  query(text: string, values: unknown[] = []) {
    let name = names.get(text)
    if (!name) names.set(text, (name = `b${names.size}`))
    return rawPool.query({ name, text, values })
  },
}
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
  const { rows } = await pool.query(`select ${BASIC}, ${EXTENDED} from users where tenant_id = $1 and id = $2`, [q(request).tenant, (request.params as { id: string }).id])
  return rows[0]
})
// S6: text search, first 100
app.get('/users', async (request) => {
  const pattern = `%${q(request).text}%`
  const { rows } = await pool.query(
    `select ${BASIC} from users where tenant_id = $1 and deleted_at is null
       and (username ilike $2 or first_name ilike $2 or last_name ilike $2 or trim(first_name || ' ' || last_name) ilike $2 or email ilike $2 or staff_number ilike $2)
     order by id limit 100`, [q(request).tenant, pattern])
  return rows
})
// S2: unread count
app.get('/notifications/count', async (request) => {
  const { rows } = await pool.query('select count(*)::int as n from notifications where tenant_id = $1 and notifiable_id = $2 and read_at is null', [q(request).tenant, q(request).user])
  return rows[0].n
})
// S3: first page of notifications
app.get('/notifications', async (request) => {
  const { rows } = await pool.query(`select ${NOTIFICATION} from notifications where tenant_id = $1 and notifiable_id = $2
    order by created_at desc nulls last, id desc nulls last limit 50`, [q(request).tenant, q(request).user])
  return rows
})
// S7: mark one notification read
app.put('/notifications/:id', async (request) => {
  const { rows } = await pool.query(`update notifications set read_at = now(), seen_at = coalesce(seen_at, now()), updated_at = now()
    where tenant_id = $1 and notifiable_id = $2 and id = $3 returning ${NOTIFICATION}`, [q(request).tenant, q(request).user, (request.params as { id: string }).id])
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
  const { rows } = await pool.query(`select si.id, si.user_id::int, si.type, si.redirect_type, si.targetable_type, si.targetable_id::int as targetable_id, si.config,
      'http://127.0.0.1/shared/' || si.id as url, ${ts('si.created_at')} as created_at, ${ts('si.updated_at')} as updated_at, ${ts('si.deleted_at')} as deleted_at
    from shared_items si, users u where u.tenant_id = $1 and u.id = $2 and si.tenant_id = $1 and si.deleted_at is null and ${grantOk('sharedItem', 'si.id')}
    order by si.id limit 50`, [q(request).tenant, q(request).user])
  return rows
})
// S5: visible folders of a type: no folder on the path may carry view grants that exclude the user
app.get('/folders', async (request) => {
  const { rows } = await pool.query(`select f.id::int, f.type, f.parent_id::int, f.lang_id,
      (select t.name from folder_translations t where t.tenant_id = f.tenant_id and t.folder_id = f.id order by (t.lang_id = f.lang_id) desc limit 1) as name,
      f.icon_id, f.show_on_menu, f.user_id, ${ts('f.created_at')} as created_at, ${ts('f.updated_at')} as updated_at
    from folders f, users u where u.tenant_id = $1 and u.id = $2 and f.tenant_id = $1 and f.type = $3
      and not exists (select 1 from unnest(f.path) as a(fid) where not ${grantOk('folder', 'a.fid')})
    order by f.id`, [q(request).tenant, q(request).user, q(request).type])
  return rows
})
// S8: idempotent grant create
app.post('/entity-permissions', async (request, reply) => {
  const b = request.body as Record<string, unknown>
  const inserted = await pool.query(`insert into entity_permissions (tenant_id, key, permission_entity, permission_entity_id, target_entity, target_entity_id)
    values ($1, $2, $3, $4, $5, $6) on conflict do nothing returning id`, [q(request).tenant, b.key, b.permission_entity, b.permission_entity_id, b.target_entity, String(b.target_entity_id)])
  const { rows } = await pool.query(`select id::int, key, permission_entity, permission_entity_id::int, target_entity, target_entity_id::int,
      ${ts('created_at')} as created_at, ${ts('updated_at')} as updated_at from entity_permissions
    where tenant_id = $1 and target_entity = $2 and target_entity_id = $3 and key = $4 and permission_entity = $5 and permission_entity_id = $6`,
  [q(request).tenant, b.target_entity, String(b.target_entity_id), b.key, b.permission_entity, b.permission_entity_id])
  return reply.code(inserted.rowCount ? 201 : 200).send(rows[0])
})

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
process.stdout.write(`listening ${(app.server.address() as { port: number }).port}\n`)
