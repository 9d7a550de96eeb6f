import { type Insertable, type UpdateObject, sql } from 'kysely'
import type { Database, Db, UsersTable } from '../../platform/db/schema.js'
import type { QuotaCounter } from '../../platform/limits/quotas.js'
import { userResource } from './users.resource.js'
import { languageIds } from '../languages/index.js'
import { applySelects, presentRows } from '../../platform/query/apply-query.js'
import type { ParsedQuery } from '../../platform/query/parse-query.js'
import type { QueryContext } from '../../platform/query/resource.js'

export function insertUser(db: Db, values: Insertable<UsersTable>) {
  return db.insertInto('users').values(values).returning(['id', 'username']).executeTakeFirstOrThrow()
}

/** One user (deleted ones included) presented per the parsed selects/relations; undefined when absent. */
export async function findPresentedUser(ctx: QueryContext, userId: number, parsed: ParsedQuery) {
  const query = applySelects(
    ctx.db.selectFrom('users as u').where('u.tenant_id', '=', ctx.tenantId).where('u.id', '=', userId),
    userResource,
    parsed,
    ctx.tenantId,
  )
  const row = await query.executeTakeFirst()
  if (!row) return undefined
  const [item] = await presentRows(userResource, parsed, [row as Record<string, unknown>], ctx)
  return item
}

/** The ids of the directory's users (not deleted), of `ids` only when given. */
export async function selectDirectoryIds(db: Db, tenantId: number, ids?: string[]): Promise<string[]> {
  const only = ids ? sql`and u.id = any(${ids.map(Number)}::bigint[])` : sql``
  const { rows } = await sql<{ id: number }>`select u.id from users u
    where u.tenant_id = ${tenantId} and u.deleted_at is null ${only}`.execute(db)
  return rows.map((row) => String(row.id))
}

/** The tenant's users as the base of list and show queries (alias `u`). */
export const selectUsers = (db: Db, tenantId: number) => db.selectFrom('users as u').where('u.tenant_id', '=', tenantId)

const stateColumns = [
  'id',
  'username',
  'password_hash',
  'first_name',
  'last_name',
  'active',
  'active_derived',
  'group_account',
  'role_id',
  'lang_id',
  'profile_picture',
  'street',
  'zipcode',
  'city',
  'email',
  'phone',
  'birthdate',
  'gender',
  'entering_date',
  'leaving_date',
  'staff_number',
  'wants_email_notifications',
  'default_route',
  'prevent_logout',
  'password_change_required',
  'deleted_at',
  'blacked_out_at',
] as const

/** Every stored column a rule may compare against (deleted users included); `forUpdate` locks the row. */
export function findUserState(db: Db, tenantId: number, id: number, { forUpdate = false } = {}) {
  let query = db.selectFrom('users').select(stateColumns).where('tenant_id', '=', tenantId).where('id', '=', id)
  if (forUpdate) query = query.forUpdate()
  return query.executeTakeFirst()
}
export type UserState = NonNullable<Awaited<ReturnType<typeof findUserState>>>

/** `values` may hold SQL expressions (e.g. `sql<Date>\`now()\``) besides plain values. */
/**
 * Updates a user's row. With `ifVersion` (a SCIM ETag: `updated_at` in microseconds) only while the
 * row is still that version: the check and the write are one statement, so of concurrent updates
 * naming the same version one wins (undefined for the others).
 */
export function updateUser(
  db: Db,
  tenantId: number,
  id: number,
  values: UpdateObject<Database, 'users'>,
  ifVersion?: string,
) {
  return db
    .updateTable('users')
    .set({ ...values, updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .$if(ifVersion !== undefined, (q) => q.where(sql<boolean>`updated_at = ${versionTime(ifVersion!)}::timestamptz`))
    .returning('id')
    .executeTakeFirst()
}

/**
 * The time a version (microseconds since the epoch, as the ETag carries it) names, as timestamptz text:
 * compared as a value, not as a function of the column (Citus refuses a stable function of a column
 * in an UPDATE). A version that is not a number names no time, so it matches no row.
 */
function versionTime(version: string): string | null {
  if (!/^\d{1,16}$/.test(version)) return null
  const micros = BigInt(version)
  const seconds = Number(micros / 1_000_000n)
  const fraction = String(micros % 1_000_000n).padStart(6, '0')
  return `${new Date(seconds * 1000).toISOString().slice(0, 19)}.${fraction}Z`
}

/** Role id → active flag and permissions for the given ids of the tenant. */
export async function findRoleStates(
  db: Db,
  tenantId: number,
  ids: number[],
): Promise<Map<number, { active: boolean; permissions: string[] }>> {
  if (ids.length === 0) return new Map()
  const rows = await db
    .selectFrom('roles')
    .select(['id', 'active', 'permissions'])
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', ids)
    .execute()
  return new Map(rows.map((r) => [r.id, { active: r.active, permissions: r.permissions }]))
}

export async function findLanguageIds(db: Db): Promise<Set<string>> {
  return new Set(await languageIds(db))
}

/** The tenant setting `password_min_length` (default 8). */
export async function findPasswordMinLength(db: Db, tenantId: number): Promise<number> {
  const row = await db.selectFrom('tenants').select('settings').where('id', '=', tenantId).executeTakeFirst()
  const value = row?.settings?.password_min_length
  return typeof value === 'number' && value > 0 ? value : 8
}

/** Failed-login rows carry the typed username; black-out removes them. */
export async function deleteLoginFailures(db: Db, tenantId: number, username: string): Promise<void> {
  // two statements: on Citus a statement joining the coordinator-only login_failures with the
  // reference table tenants is sent to a worker, where login_failures does not exist
  const tenant = await db.selectFrom('tenants').select('slug').where('id', '=', tenantId).executeTakeFirst()
  if (!tenant) return
  await db
    .deleteFrom('login_failures')
    .where('tenant_slug', '=', tenant.slug)
    .where('username', '=', username.toLowerCase())
    .execute()
}

/** Users (not blacked out) whose lower-cased username is in `names`. */
export function findUsersByUsernames(db: Db, tenantId: number, names: string[]) {
  if (names.length === 0) return Promise.resolve([])
  return db
    .selectFrom('users')
    .select([
      'id',
      'username',
      'role_id',
      'group_account',
      'first_name',
      'last_name',
      'entering_date',
      'leaving_date',
      'deleted_at',
      sql<string>`lower(username)`.as('key'),
    ])
    .where('tenant_id', '=', tenantId)
    .where('blacked_out_at', 'is', null)
    .where(sql<boolean>`lower(username) = any(${names}::text[])`)
    .execute()
}

/** Non-deleted users whose username is not in `names`, except `exceptId` (CSV `delete_users`). */
export function selectUsersAbsentFrom(db: Db, tenantId: number, names: string[], exceptId: number) {
  return db
    .selectFrom('users')
    .select(['id', 'username', 'first_name', 'last_name'])
    .where('tenant_id', '=', tenantId)
    .where('deleted_at', 'is', null)
    .where('id', '!=', exceptId)
    .where(sql<boolean>`not (lower(username) = any(${names}::text[]))`)
    .orderBy('id')
    .execute()
}

/** Tenants that have users whose `active` follows their dates. */
export async function selectTenantsWithDerivedUsers(db: Db): Promise<number[]> {
  const rows = await db
    .selectFrom('users')
    .select('tenant_id')
    .distinct()
    .where('active_derived', '=', true)
    .where('deleted_at', 'is', null)
    .execute()
  return rows.map((r) => r.tenant_id)
}

/**
 * Re-derives `active` from entering/leaving dates (UTC today) for users whose flag is derived and
 * whose dates crossed today; returns the ids that changed.
 */
export async function rederiveActive(db: Db, tenantId: number): Promise<number[]> {
  // `is true` rather than coalesce(…, false): Citus refuses non-immutable functions (current_date) in COALESCE and CASE
  const derived = sql<boolean>`not ((entering_date > current_date) is true or (leaving_date < current_date) is true)`
  const rows = await db
    .updateTable('users')
    .set({ active: derived, updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('active_derived', '=', true)
    .where('deleted_at', 'is', null)
    .where(sql<boolean>`active is distinct from ${derived}`)
    .returning('id')
    .execute()
  return rows.map((r) => r.id)
}

/** Accounts deactivated before `cutOff` and not yet erased: deleted then, or inactive with a leaving date then. */
export function deactivatedBefore(db: Db, tenantId: number, cutOff: Date) {
  const at = cutOff.toISOString()
  return db
    .selectFrom('users')
    .where('tenant_id', '=', tenantId)
    .where('blacked_out_at', 'is', null)
    .where((eb) => eb.or([eb('deleted_at', '<', at), eb.and([eb('active', '=', false), eb('leaving_date', '<', at)])]))
}

/** Whether a role of the tenant requires MFA of its users. */
export async function roleRequiresMfa(db: Db, tenantId: number, roleId: number): Promise<boolean> {
  const row = await db
    .selectFrom('roles')
    .select('requires_mfa')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', roleId)
    .executeTakeFirst()
  return row?.requires_mfa ?? false
}

/** Those of `ids` that are inactive now. */
export async function inactiveAmong(db: Db, tenantId: number, ids: number[]): Promise<number[]> {
  if (ids.length === 0) return []
  const rows = await db
    .selectFrom('users')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', ids)
    .where('active', '=', false)
    .execute()
  return rows.map((r) => r.id)
}

/** A user's whole stored row (deleted ones included); `forUpdate` locks it. */
export function findStoredUser(db: Db, tenantId: number, id: number, { forUpdate = false } = {}) {
  let query = db.selectFrom('users').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id)
  if (forUpdate) query = query.forUpdate()
  return query.executeTakeFirst()
}

/**
 * The departments of the given users (`user_id`, `id`, `name`, by department id), in one statement;
 * `full` adds the department's other columns. Serves the users resource's `departments` relation,
 * SCIM's `groups` of a user and the data export's memberships.
 */
export function departmentsOfUsers(db: Db, tenantId: number, userIds: number[], { full = false } = {}) {
  return db
    .selectFrom('department_users as du')
    .innerJoin('departments as d', (j) =>
      j.onRef('d.id', '=', 'du.department_id').onRef('d.tenant_id', '=', 'du.tenant_id'),
    )
    .select(
      full
        ? ['du.user_id', 'd.id', 'd.name', 'd.folder_id', 'd.notification_setting_id', 'd.created_at', 'd.updated_at']
        : ['du.user_id', 'd.id', 'd.name'],
    )
    .where('du.tenant_id', '=', tenantId)
    .where('du.user_id', 'in', userIds)
    .orderBy('d.id')
    .execute()
}

/** The statement's time, as a value of a write (`deleted_at: statementTime()`). */
export const statementTime = () => sql<Date>`now()`

/**
 * Marks a user for logout at clock_timestamp(): tokens issued later in this same transaction stay
 * valid. Read first and passed as a value: Citus refuses volatile functions in an UPDATE, and
 * evaluates the clock_timestamp() of a token INSERT on the coordinator, as this select is.
 */
export async function markLogoutRequested(db: Db, tenantId: number, id: number) {
  const {
    rows: [mark],
  } = await sql<{ now: string }>`select clock_timestamp()::text as now`.execute(db)
  return updateUser(db, tenantId, id, { logout_requested_at: sql<Date>`${mark.now}::timestamptz` })
}

/** The users quota: the tenant's users but the deleted ones (docs/limits.md). */
export const usersQuota: QuotaCounter = {
  name: 'users',
  used: (tenantId) => sql`(select count(*) from users where tenant_id = ${tenantId} and deleted_at is null)`,
}
