import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import { type Reach, type ReachDetail, SMALL_GROUP } from './content-reach.resource.js'

// The audience and the reach of a record that must be read, as SQL (docs/content-reading.md). The content
// rule over the user set is the engine's (`viewedBy`: `ContentResource.viewedBySql` of the record), for
// the scanned user row `vu` joined with its role as `vr`.

/** SQL: the ids of the users or departments some grant of the tenant names (whatever its key and target). */
const granteesSql = (tenantId: number, entity: 'user' | 'department') =>
  sql<{ id: number }>`select distinct ep.permission_entity_id as id from entity_permissions ep
      where ep.tenant_id = ${tenantId} and ep.permission_entity = ${entity}`

/**
 * SQL: the audience of a record — every active, personal, not blacked-out user who may view it now
 * (`viewedBy`: the content rule over the user set, as notifications are), as `aud(id)`. The user-set
 * rule depends on a user only through their id (grants naming them), role and departments
 * (`userSetPrincipal`), so it is evaluated once per *profile* — same role, same departments among
 * those some grant names, named by no grant — on one member of each, not once per user: a
 * 100,000-user tenant has a few hundred profiles. Users a grant names are profiles of their own.
 */
export const audienceSql = (tenantId: number, viewedBy: RawBuilder<boolean>): RawBuilder<{ id: number }> =>
  sql<{ id: number }>`with members as materialized (
        select au.id, au.role_id || '|' || coalesce(ad.departments, '') || '|' || coalesce(an.id::text, '') as profile
        from users au
        left join (select du.user_id, string_agg(du.department_id::text, ',' order by du.department_id) as departments
          from department_users du where du.tenant_id = ${tenantId} and du.department_id in (${granteesSql(tenantId, 'department')})
          group by du.user_id) ad on ad.user_id = au.id
        left join (${granteesSql(tenantId, 'user')}) an on an.id = au.id
        where au.tenant_id = ${tenantId}
          and au.active and au.deleted_at is null and au.blacked_out_at is null and not au.group_account
      ), viewing_profiles as (
        select pr.profile from (select min(m.id) as id, m.profile from members m group by m.profile) pr
          join users vu on vu.tenant_id = ${tenantId} and vu.id = pr.id
          join roles vr on vr.tenant_id = ${tenantId} and vr.id = vu.role_id
        where ${viewedBy}
      )
      select m.id from members m where m.profile in (select vp.profile from viewing_profiles vp)`

/**
 * SQL: every audience candidate (active, personal, not blacked out) with the parts of their profile
 * (`role_id`, `dkey`: the departments some grant names, `nkey`: their id when a grant names them, else
 * 0) and their read of record `id` (of the content `alias`): what the reach counts are summed from.
 */
const profiledReadersSql = (alias: string, tenantId: number, id: number) =>
  sql`select au.id, au.role_id, coalesce(ad.departments, '') as dkey, coalesce(an.id, 0) as nkey,
        r.seen_at, r.confirmed_at
      from users au
      left join (select du.user_id, string_agg(du.department_id::text, ',' order by du.department_id) as departments
        from department_users du where du.tenant_id = ${tenantId} and du.department_id in (${granteesSql(tenantId, 'department')})
        group by du.user_id) ad on ad.user_id = au.id
      left join (${granteesSql(tenantId, 'user')}) an on an.id = au.id
      left join content_reads r on r.tenant_id = ${tenantId} and r.target_type = ${alias}
        and r.target_id = ${id} and r.user_id = au.id
      where au.tenant_id = ${tenantId}
        and au.active and au.deleted_at is null and au.blacked_out_at is null and not au.group_account`

/**
 * The profiles of `profiles` (columns role_id, dkey, nkey and a member's `id`) whose member may view
 * the record (`viewedBy`): the content rule is evaluated on one member of each profile.
 */
const viewingSql = (t: number, profiles: string, columns: string, viewedBy: RawBuilder<boolean>) =>
  sql`select ${sql.raw(columns)} from ${sql.table(profiles)} p
      -- one probe per profile (expecting a profile per candidate, the planner would hash every user)
      cross join lateral (select u.id, u.role_id from users u where u.tenant_id = ${t} and u.id = p.id limit 1) vu
      join roles vr on vr.tenant_id = ${t} and vr.id = vu.role_id
    where ${viewedBy}`

/** SQL: the pending count of summed counts: not confirmed when a confirmation is asked, else not seen. */
const pendingSql = (
  requires: boolean,
  audience: RawBuilder<unknown>,
  seen: RawBuilder<unknown>,
  confirmed: RawBuilder<unknown>,
) => (requires ? sql`${audience} - ${confirmed}` : sql`${audience} - ${seen}`)

/** SQL: the sums of the audience, seen and confirmed counts of the rows under `alias`. */
const sumsSql = (alias: string) =>
  [`${alias}.audience`, `${alias}.seen`, `${alias}.confirmed`].map((column) => sql`sum(${sql.ref(column)})`)

/** What the reach counts of a record are without its department counts. */
export type ReachTotals = Omit<Reach, 'requires_reading_confirmation' | 'reach_detail' | 'by_department'>

/**
 * The totals of record `id`'s reach (`requires`: it asks for a confirmation): the candidates counted
 * per profile, the profiles that may view (`viewedBy`) summed.
 */
export async function selectReachTotals(
  trx: Db,
  alias: string,
  t: number,
  id: number,
  requires: boolean,
  viewedBy: RawBuilder<boolean>,
): Promise<ReachTotals> {
  const [audience, seen, confirmed] = sumsSql('v')
  const { rows } = await sql<ReachTotals>`
      with readers as (${profiledReadersSql(alias, t, id)}
      ), profiles as (
        select role_id, dkey, nkey, min(id) as id, count(*) as audience, count(seen_at) as seen,
          count(confirmed_at) as confirmed
        from readers group by role_id, dkey, nkey
      ), viewing as materialized (${viewingSql(t, 'profiles', 'p.audience, p.seen, p.confirmed', viewedBy)})
      select coalesce(${audience}, 0)::int as audience, coalesce(${seen}, 0)::int as seen,
        coalesce(${confirmed}, 0)::int as confirmed,
        coalesce(${pendingSql(requires, audience, seen, confirmed)}, 0)::int as pending
      from viewing v`.execute(trx)
  return rows[0]
}

/**
 * The counts of record `id`'s reach per department (a user in two departments counts in each), the
 * small departments left out under `counts_only`.
 */
export async function selectReachByDepartment(
  trx: Db,
  alias: string,
  t: number,
  id: number,
  requires: boolean,
  detail: ReachDetail,
  viewedBy: RawBuilder<boolean>,
): Promise<Reach['by_department']> {
  const [depAudience, depSeen, depConfirmed] = sumsSql('pd')
  const { rows } = await sql<Pick<Reach, 'by_department'>>`
      with readers as (${profiledReadersSql(alias, t, id)}
      ), profile_departments as (
        select pr.role_id, pr.dkey, pr.nkey, du.department_id, min(pr.id) as id, count(*) as audience,
          count(pr.seen_at) as seen, count(pr.confirmed_at) as confirmed
        from readers pr join department_users du on du.tenant_id = ${t} and du.user_id = pr.id
        group by pr.role_id, pr.dkey, pr.nkey, du.department_id
      ), profiles as (
        select role_id, dkey, nkey, min(id) as id from profile_departments group by role_id, dkey, nkey
      ), viewing as materialized (${viewingSql(t, 'profiles', 'p.role_id, p.dkey, p.nkey', viewedBy)}
      ), dep as (
        select d.id, d.name, ${depAudience}::int as audience, ${depSeen}::int as seen,
          ${depConfirmed}::int as confirmed, (${pendingSql(requires, depAudience, depSeen, depConfirmed)})::int as pending
        from profile_departments pd
        join viewing v on v.role_id = pd.role_id and v.dkey = pd.dkey and v.nkey = pd.nkey
        join departments d on d.tenant_id = ${t} and d.id = pd.department_id
        group by d.id, d.name
        ${detail === 'counts_only' ? sql`having ${depAudience} >= ${SMALL_GROUP}` : sql``}
      )
      select coalesce(json_agg(json_build_object('id', dep.id, 'name', dep.name, 'audience', dep.audience,
          'seen', dep.seen, 'confirmed', dep.confirmed, 'pending', dep.pending) order by dep.name, dep.id), '[]'::json)
        as by_department
      from dep`.execute(trx)
  return rows[0].by_department
}

/**
 * The per-person list's base (alias `a`): the audience (`audience`: `audienceSql` of record `id`) with
 * their role (`ar`) and their read of the record (`ard`); `art` names the record for the reminder column.
 */
export function selectReachUsers(db: Db, alias: string, t: number, id: number, audience: RawBuilder<{ id: number }>) {
  return db
    .selectFrom('users as a')
    .innerJoin(
      sql<{
        target_type: string
        target_id: number
      }>`(select ${alias}::text as target_type, ${id}::bigint as target_id)`.as('art'),
      (join) => join.onTrue(),
    )
    .leftJoin('roles as ar', (join) => join.onRef('ar.id', '=', 'a.role_id').on('ar.tenant_id', '=', t))
    .leftJoin(
      sql<{
        user_id: number
        seen_at: string | null
        confirmed_at: string | null
      }>`(select r.user_id, r.seen_at, r.confirmed_at from content_reads r
          where r.tenant_id = ${t} and r.target_type = ${alias} and r.target_id = ${id})`.as('ard'),
      (join) => join.onRef('ard.user_id', '=', 'a.id'),
    )
    .where('a.tenant_id', '=', t)
    .where(sql<boolean>`a.id in (${audience})`)
}
