import { type RawBuilder, sql } from 'kysely'
import { Type } from 'typebox'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import type { Db } from '../../platform/db/schema.js'
import { withWorkMem } from '../../platform/db/work-mem.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { AppError, forbidden, notFound } from '../../platform/http/errors.js'
import { Nullable, TimestampSchema } from '../../platform/http/schemas.js'
import { enqueue } from '../../platform/jobs/jobs.js'
import type { QueryContext, RelationDef, WordFilter } from '../../platform/query/resource.js'
import { ownStateChange, recordSyncWrites } from '../../platform/sync/change-log.js'
import type { Principal } from './content-access.js'
import { type ContentChange, type ContentResource, type ContentRow, contentRow } from './content-resource.js'
import { type Reach, SMALL_GROUP } from './content-reach.resource.js'
import { PUBLISH_JOB, type PublishPayload, REMIND_JOB, type RemindPayload } from './content-reading.jobs.js'
import { readReachDetail } from './content-reading.queries.js'

/**
 * Content that must be read (issue 41, docs/content-reading.md), for any content table with the
 * columns of migration 0160 (`published_at`, `published_notified_at`, `pinned`, `comments_enabled`,
 * `requires_reading_confirmation`, `confirmation_due_at`, `reminded_at`): publishing exactly once,
 * the reader's own state, the reach of a record and reminders of those still pending.
 */

/** The reader's own state of a record (`my_state`). */
export const MyStateSchema = Type.Object(
  { seen_at: Nullable(TimestampSchema), confirmed_at: Nullable(TimestampSchema) },
  { $id: 'ReadingState' },
)

/** Memory of each hash of the reach counts: the candidates of a 100,000-user tenant are hashed, not sorted on disk. */
const REPORT_WORK_MEM_MB = 64

/** What each reading module decides itself: its notifications (a module, not the platform, sends them). */
export interface ReadingNotices {
  /** The record was published (now or by its schedule), or updated with `notify: true`. */
  published(trx: Db, tenantId: number, row: ContentRow, eventId: string, kind: 'published' | 'updated'): Promise<void>
  /** A reminder went out to the users recorded under `reminderId`. */
  reminded(trx: Db, tenantId: number, row: ContentRow, reminderId: number): Promise<void>
}

export interface ReadingDeclaration {
  /** The content alias (`infoboardPost`), the stored `target_type` of reads and reminders. */
  alias: string
  table: string
  module: string
  /** Domain event of publishing (`infoboard.post.published`), which automations may send to webhooks. */
  publishedEvent: string
  /** Whether an edit of a published record notifies always (manual entries, contract 30) or only with `notify: true` (posts). */
  editsNotify?: 'always' | 'when_asked'
}

const timestampOrNull = (value: unknown) => (typeof value === 'string' ? value : null)
const stateOf = (read: { seen_at?: unknown; confirmed_at?: unknown } | undefined) => ({
  seen_at: timestampOrNull(read?.seen_at),
  confirmed_at: timestampOrNull(read?.confirmed_at),
})

/** The declaration parts a reading content adds to `defineContent` (view rule, `my_state`, filters, pinned first). */
export function readingContentParts(r: ReadingDeclaration) {
  const myState: RelationDef = {
    key: 'id',
    many: false,
    async load(ctx: QueryContext, keys: unknown[]) {
      const userId = ctx.actor?.userId ?? 0
      const { rows } = await sql<{ target_id: number; seen_at: string | null; confirmed_at: string | null }>`
        select target_id, seen_at, confirmed_at from content_reads
        where tenant_id = ${ctx.tenantId} and target_type = ${r.alias} and user_id = ${userId}
          and target_id = any(${keys.map(Number)}::bigint[])`.execute(ctx.db)
      const found = new Map(rows.map((row) => [Number(row.target_id), row]))
      return new Map(keys.map((key) => [key, stateOf(found.get(Number(key)))]))
    },
    // read with the page (a primary-key probe per row and column): a list is one statement, not two
    inline: {
      columns(ctx) {
        const userId = ctx.actor?.userId
        if (userId === undefined) return undefined
        const read = (column: 'seen_at' | 'confirmed_at') =>
          sql`(select cr.${sql.ref(column)} from content_reads cr where cr.tenant_id = ${ctx.tenantId}
            and cr.target_type = ${r.alias} and cr.target_id = c.id and cr.user_id = ${userId})`
        return { seen_at: read('seen_at'), confirmed_at: read('confirmed_at') }
      },
      assemble: stateOf,
    },
  }
  /** `filter[confirmation]=pending|confirmed`: published records asking for a confirmation, by the reader's own state. */
  const confirmation: WordFilter = {
    words: ['pending', 'confirmed'],
    sql(word, ctx) {
      const confirmed = sql<boolean>`exists (select 1 from content_reads cr where cr.tenant_id = ${ctx.tenantId}
        and cr.target_type = ${r.alias} and cr.target_id = c.id and cr.user_id = ${ctx.actor?.userId ?? 0}
        and cr.confirmed_at is not null)`
      return sql<boolean>`(c.requires_reading_confirmation and c.published_at <= now()
        and ${word === 'pending' ? sql`not ${confirmed}` : confirmed})`
    },
  }
  return {
    /** Drafts (no `published_at`) and scheduled records are visible only to editors (`<module>.manage`). */
    viewRule: (p: Principal, alias: string) =>
      sql<boolean>`(${sql.ref(`${alias}.published_at`)} <= now() or ${p.can(`${r.module}.manage`)})`,
    relations: { my_state: myState },
    defaultRelations: ['my_state'],
    outputs: { my_state: MyStateSchema },
    customFilters: { confirmation },
    defaultSort: ['-pinned', '-id'],
    fields: {
      published_at: { type: 'timestamp' },
      pinned: { type: 'boolean' },
      comments_enabled: { type: 'boolean' },
      requires_reading_confirmation: { type: 'boolean' },
      confirmation_due_at: { type: 'timestamp' },
    },
  } as const
}

/** The written body fields of a reading content (create and update), as TypeBox schemas. */
export const readingBodyFields = (timestampInput: ReturnType<typeof Type.String>) => ({
  published_at: Type.Union([timestampInput, Type.Null()], {
    description: 'absent: published now; null: a draft; a future time: scheduled (published and notified then)',
  }),
  pinned: Type.Boolean({ description: 'pinned posts come first in lists' }),
  comments_enabled: Type.Boolean(),
  requires_reading_confirmation: Type.Boolean(),
  confirmation_due_at: Type.Union([timestampInput, Type.Null()]),
})

/** The reading service of one content resource. */
export function defineReading(decl: ReadingDeclaration, content: ContentResource, notices: ReadingNotices) {
  const table = sql.table(decl.table)

  /**
   * Publishes the record if it is due and was never published: ONE conditional update claims it
   * (`published_notified_at` from null), so however many workers or requests race, exactly one
   * records the event and queues the notifications, in its transaction.
   */
  async function publishIfDue(trx: Db, tenantId: number, id: number, actorId: number | null): Promise<boolean> {
    const { rows } = await sql<Record<string, unknown>>`update ${table} set published_notified_at = now()
      where tenant_id = ${tenantId} and id = ${id} and published_notified_at is null and published_at <= now()
      returning *`.execute(trx)
    if (rows.length === 0) return false
    const row = contentRow(rows[0])
    const eventId = await recordDomainEvent(trx, {
      type: decl.publishedEvent,
      tenantId,
      actorId,
      subjectType: decl.alias,
      subjectId: id,
      data: { id, title: row.title, published_at: row.published_at, url: content.appUrl('', row) },
    })
    await notices.published(trx, tenantId, row, eventId, 'published')
    return true
  }

  /** After a create or update (in its transaction): publish now, schedule the job, or notify an edit when asked. */
  async function afterWrite(trx: Db, change: ContentChange): Promise<void> {
    const { row, actor } = change
    if (change.kind === 'deleted') {
      // what was read and reminded goes with the record (its reminder recipients cascade)
      await sql`delete from content_reads where tenant_id = ${actor.tenantId} and target_type = ${decl.alias}
        and target_id = ${row.id}`.execute(trx)
      await sql`delete from content_reminders where tenant_id = ${actor.tenantId} and target_type = ${decl.alias}
        and target_id = ${row.id}`.execute(trx)
      return
    }
    await scheduleReminder(trx, change)
    if (row.published_notified_at === null) {
      if (await publishIfDue(trx, actor.tenantId, row.id, actor.userId)) return
      if (typeof row.published_at === 'string') {
        const payload: PublishPayload = { alias: decl.alias, tenantId: actor.tenantId, id: row.id }
        // one pending job per record: a new schedule replaces the old one's run time (job key)
        await enqueue(trx, PUBLISH_JOB, payload, {
          key: `${PUBLISH_JOB}:${decl.alias}:${row.id}`,
          runAt: new Date(`${row.published_at.replace(' ', 'T')}Z`),
          maxAttempts: 10,
        })
      }
      return
    }
    const asked = decl.editsNotify === 'always' || change.values.notify === true
    if (change.kind === 'updated' && asked) await notices.published(trx, actor.tenantId, row, change.eventId, 'updated')
  }

  /**
   * The automatic reminder at `confirmation_due_at` (issue 41): one pending job per record (job key),
   * moved when the due time changes, removed when the record no longer asks for a confirmation or
   * has no due time. A due time already past when written schedules nothing.
   */
  async function scheduleReminder(trx: Db, change: ContentChange): Promise<void> {
    const { row, actor } = change
    const touched = ['requires_reading_confirmation', 'confirmation_due_at'].some((k) => k in change.values)
    if (change.kind !== 'created' && !touched) return
    const key = `${REMIND_JOB}:${decl.alias}:${row.id}`
    const due =
      typeof row.confirmation_due_at === 'string' ? new Date(`${row.confirmation_due_at.replace(' ', 'T')}Z`) : null
    if (row.requires_reading_confirmation === true && due !== null && due.getTime() > Date.now()) {
      const payload: RemindPayload = { alias: decl.alias, tenantId: actor.tenantId, id: row.id, due: due.toISOString() }
      await enqueue(trx, REMIND_JOB, payload, { key, runAt: due, maxAttempts: 10 })
    } else if (change.kind === 'updated') await sql`select graphile_worker.remove_job(${key})`.execute(trx)
  }

  /**
   * The reminder job's run: reminds the pending readers if the record still asks for a confirmation by
   * that due time and is published; a manual reminder within the last 24 hours counts as this one.
   */
  async function remindIfDue(trx: Db, payload: RemindPayload): Promise<number | null> {
    const row = await content.findStored(trx, payload.tenantId, payload.id)
    if (!row || row.requires_reading_confirmation !== true || row.published_notified_at === null) return null
    const due =
      typeof row.confirmation_due_at === 'string' ? new Date(`${row.confirmation_due_at.replace(' ', 'T')}Z`) : null
    if (due?.toISOString() !== payload.due) return null
    const sent = await remindPending(trx, payload.tenantId, row, null)
    return 'reminder' in sent ? sent.reminder.recipients : null
  }

  /** The visible record or 404 (same answer for "missing" and "outside the audience"). */
  async function visible(db: Db, actor: Actor, id: number): Promise<ContentRow> {
    return (await visibleWithState(db, actor, id)).row
  }

  /** The record if the actor may view it (else 404), with the actor's own reading state, in one statement. */
  async function visibleWithState(db: Db, actor: Actor, id: number) {
    if (!can(actor, `${decl.module}.view`)) throw forbidden(`This requires the "${decl.module}.view" permission`)
    const { rows } = await sql<Record<string, unknown> & { my_seen_at: string | null; my_confirmed_at: string | null }>`
      select c.*, r.seen_at as my_seen_at, r.confirmed_at as my_confirmed_at from ${table} c
        left join content_reads r on r.tenant_id = c.tenant_id and r.target_type = ${decl.alias}
          and r.target_id = c.id and r.user_id = ${actor.userId}
      where c.tenant_id = ${actor.tenantId} and c.id = ${id} and ${content.visibleToActor(actor, 'c')}`.execute(db)
    if (!rows[0]) throw notFound(content.label)
    const { my_seen_at, my_confirmed_at, ...row } = rows[0]
    return { row: contentRow(row), state: { seen_at: my_seen_at, confirmed_at: my_confirmed_at } }
  }

  /** Records that the actor opened the record; `created` on the first time. */
  async function markSeen(db: Db, actor: Actor, id: number) {
    const { state: before } = await visibleWithState(db, actor, id)
    // the first time, the actor's `my_state` changes: its change record for the actor's offline clients
    // (issue 43) rides in the write's transaction; a repeat changes nothing and stays one statement
    const write = async (trx: Db) => {
      const result = await sql<{ seen_at: string; confirmed_at: string | null; created: boolean }>`
      insert into content_reads as cr (tenant_id, target_type, target_id, user_id) values (${actor.tenantId}, ${decl.alias}, ${id}, ${actor.userId})
      on conflict (tenant_id, target_type, target_id, user_id) do update set seen_at = cr.seen_at
      returning seen_at, confirmed_at, (xmax = 0) as created`.execute(trx)
      if (result.rows[0].created)
        await recordSyncWrites(trx, actor.tenantId, { changes: [ownStateChange(decl.alias, id, actor.userId)] })
      return result
    }
    const { rows } =
      db.isTransaction || before.seen_at !== null ? await write(db) : await db.transaction().execute(write)
    const { created, ...state } = rows[0]
    return { created, state }
  }

  /** Confirms reading (records the time) and marks the user's notifications of the record read; `created` on the first time. */
  async function confirm(db: Db, actor: Actor, id: number) {
    const { row, state: before } = await visibleWithState(db, actor, id)
    if (row.requires_reading_confirmation !== true)
      throw new AppError(
        422,
        'confirmation_not_required',
        `This ${content.label.toLowerCase()} asks for no confirmation`,
      )
    // confirmed before: nothing to write (a confirmation is never taken back), one read answers the repeat
    if (before.confirmed_at !== null) return { created: false, state: before }
    // the confirmation, and the first time also the user's notifications of the record marked read, in
    // one transaction of two statements Citus routes whole (a write inside a CTE is not), with the marks'
    // change records for offline clients; the time is a
    // value, not now(): Citus refuses a non-immutable function in RETURNING and in ON CONFLICT's SET
    const at = new Date().toISOString()
    const write = async (trx: Db) => {
      const result = await sql<{ seen_at: string; confirmed_at: string; created: boolean }>`
        insert into content_reads as cr (tenant_id, target_type, target_id, user_id, seen_at, confirmed_at)
          values (${actor.tenantId}, ${decl.alias}, ${id}, ${actor.userId}, ${at}::timestamptz, ${at}::timestamptz)
        on conflict (tenant_id, target_type, target_id, user_id)
          do update set confirmed_at = coalesce(cr.confirmed_at, excluded.confirmed_at)
        returning seen_at, confirmed_at, (confirmed_at = ${at}::timestamptz) as created`.execute(trx)
      if (result.rows[0].created) {
        const marked = await sql<{
          id: string
        }>`update notifications set read_at = now() where tenant_id = ${actor.tenantId}
          and notifiable_type = 'user' and notifiable_id = ${actor.userId}
          and targetable_type = ${decl.alias} and targetable_id = ${id} and read_at is null returning id`.execute(trx)
        // the marks and the actor's new `my_state` reach the actor's offline clients (issue 43; the
        // notification entity is the notifications module's)
        await recordSyncWrites(trx, actor.tenantId, {
          changes: [
            ...marked.rows.map((row) => ({ entity: 'notification', id: row.id, userId: actor.userId })),
            ownStateChange(decl.alias, id, actor.userId),
          ],
        })
      }
      return result
    }
    const { rows } = db.isTransaction ? await write(db) : await db.transaction().execute(write)
    const { created, ...state } = rows[0]
    return { created, state }
  }

  /**
   * SQL: the audience of record `id` — every active, personal, not blacked-out user who may view it
   * now (the content rule over the user set, as notifications are), as `aud(id)`. The user-set rule
   * depends on a user only through their id (grants naming them), role and departments
   * (`userSetPrincipal`), so it is evaluated once per *profile* — same role, same departments among
   * those some grant names, named by no grant — on one member of each, not once per user: a
   * 100,000-user tenant has a few hundred profiles. Users a grant names are profiles of their own.
   */
  /** SQL: the ids of the users or departments some grant of the tenant names (whatever its key and target). */
  const granteesSql = (tenantId: number, entity: 'user' | 'department') =>
    sql<{ id: number }>`select distinct ep.permission_entity_id as id from entity_permissions ep
      where ep.tenant_id = ${tenantId} and ep.permission_entity = ${entity}`

  const audienceSql = (tenantId: number, id: number): RawBuilder<{ id: number }> =>
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
        where ${content.viewedBySql(tenantId, id)}
      )
      select m.id from members m where m.profile in (select vp.profile from viewing_profiles vp)`

  /** The record for someone who may edit it: visible (else 404) and `<module>.manage` (else 403). */
  async function editable(db: Db, actor: Actor, id: number): Promise<ContentRow> {
    const row = await visible(db, actor, id)
    if (!can(actor, `${decl.module}.manage`)) throw forbidden(`This requires the "${decl.module}.manage" permission`)
    return row
  }

  /**
   * SQL: every audience candidate (active, personal, not blacked out) with the parts of their profile
   * (`role_id`, `dkey`: the departments some grant names, `nkey`: their id when a grant names them, else
   * 0) and their read of record `id`: what the reach counts are summed from.
   */
  const profiledReadersSql = (tenantId: number, id: number) =>
    sql`select au.id, au.role_id, coalesce(ad.departments, '') as dkey, coalesce(an.id, 0) as nkey,
        r.seen_at, r.confirmed_at
      from users au
      left join (select du.user_id, string_agg(du.department_id::text, ',' order by du.department_id) as departments
        from department_users du where du.tenant_id = ${tenantId} and du.department_id in (${granteesSql(tenantId, 'department')})
        group by du.user_id) ad on ad.user_id = au.id
      left join (${granteesSql(tenantId, 'user')}) an on an.id = au.id
      left join content_reads r on r.tenant_id = ${tenantId} and r.target_type = ${decl.alias}
        and r.target_id = ${id} and r.user_id = au.id
      where au.tenant_id = ${tenantId}
        and au.active and au.deleted_at is null and au.blacked_out_at is null and not au.group_account`

  /**
   * The profiles of `profiles` (columns role_id, dkey, nkey and a member's `id`) whose member may view
   * record `id`: the content rule is evaluated on one member of each profile.
   */
  const viewingSql = (t: number, id: number, profiles: string, columns: string) =>
    sql`select ${sql.raw(columns)} from ${sql.table(profiles)} p
      -- one probe per profile (expecting a profile per candidate, the planner would hash every user)
      cross join lateral (select u.id, u.role_id from users u where u.tenant_id = ${t} and u.id = p.id limit 1) vu
      join roles vr on vr.tenant_id = ${t} and vr.id = vu.role_id
    where ${content.viewedBySql(t, id)}`

  /**
   * The counts of a record's reach, set-based, never holding the audience: the candidates are counted
   * per profile, the content rule is evaluated on one member of each profile, and the counts of the
   * profiles that may view are summed. Two statements side by side (each a pass over the tenant's
   * candidates, so the report takes the time of one): the totals, and the counts per department (a
   * user in two departments counts once in the totals and once in each department).
   */
  async function reach(db: Db, actor: Actor, id: number): Promise<Reach> {
    const row = await editable(db, actor, id)
    const t = actor.tenantId
    const requires = row.requires_reading_confirmation === true
    const detail = await readReachDetail(db, t)
    const pending = (audience: RawBuilder<unknown>, seen: RawBuilder<unknown>, confirmed: RawBuilder<unknown>) =>
      requires ? sql`${audience} - ${confirmed}` : sql`${audience} - ${seen}`
    const sums = (alias: string) =>
      [`${alias}.audience`, `${alias}.seen`, `${alias}.confirmed`].map((column) => sql`sum(${sql.ref(column)})`)
    const [depAudience, depSeen, depConfirmed] = sums('pd')
    const [audience, seen, confirmed] = sums('v')
    const totals = withWorkMem(db, REPORT_WORK_MEM_MB, (trx) =>
      sql<Omit<Reach, 'requires_reading_confirmation' | 'reach_detail' | 'by_department'>>`
      with readers as (${profiledReadersSql(t, id)}
      ), profiles as (
        select role_id, dkey, nkey, min(id) as id, count(*) as audience, count(seen_at) as seen,
          count(confirmed_at) as confirmed
        from readers group by role_id, dkey, nkey
      ), viewing as materialized (${viewingSql(t, id, 'profiles', 'p.audience, p.seen, p.confirmed')})
      select coalesce(${audience}, 0)::int as audience, coalesce(${seen}, 0)::int as seen,
        coalesce(${confirmed}, 0)::int as confirmed,
        coalesce(${pending(audience, seen, confirmed)}, 0)::int as pending
      from viewing v`.execute(trx),
    )
    const departments = withWorkMem(db, REPORT_WORK_MEM_MB, (trx) =>
      sql<Pick<Reach, 'by_department'>>`
      with readers as (${profiledReadersSql(t, id)}
      ), profile_departments as (
        select pr.role_id, pr.dkey, pr.nkey, du.department_id, min(pr.id) as id, count(*) as audience,
          count(pr.seen_at) as seen, count(pr.confirmed_at) as confirmed
        from readers pr join department_users du on du.tenant_id = ${t} and du.user_id = pr.id
        group by pr.role_id, pr.dkey, pr.nkey, du.department_id
      ), profiles as (
        select role_id, dkey, nkey, min(id) as id from profile_departments group by role_id, dkey, nkey
      ), viewing as materialized (${viewingSql(t, id, 'profiles', 'p.role_id, p.dkey, p.nkey')}
      ), dep as (
        select d.id, d.name, ${depAudience}::int as audience, ${depSeen}::int as seen,
          ${depConfirmed}::int as confirmed, (${pending(depAudience, depSeen, depConfirmed)})::int as pending
        from profile_departments pd
        join viewing v on v.role_id = pd.role_id and v.dkey = pd.dkey and v.nkey = pd.nkey
        join departments d on d.tenant_id = ${t} and d.id = pd.department_id
        group by d.id, d.name
        ${detail === 'counts_only' ? sql`having ${depAudience} >= ${SMALL_GROUP}` : sql``}
      )
      select coalesce(json_agg(json_build_object('id', dep.id, 'name', dep.name, 'audience', dep.audience,
          'seen', dep.seen, 'confirmed', dep.confirmed, 'pending', dep.pending) order by dep.name, dep.id), '[]'::json)
        as by_department
      from dep`.execute(trx),
    )
    const [{ rows: sum }, { rows: byDepartment }] = await Promise.all([totals, departments])
    return {
      ...sum[0],
      requires_reading_confirmation: requires,
      reach_detail: detail,
      by_department: byDepartment[0].by_department,
    }
  }

  /**
   * The per-person list's base query and context (permission `<module>.reach`, tenant setting
   * `reach_detail = named`): the audience with their reads, role and departments.
   */
  async function reachUsers(db: Db, actor: Actor, id: number) {
    const row = await visible(db, actor, id)
    if (!can(actor, `${decl.module}.reach`)) throw forbidden(`This requires the "${decl.module}.reach" permission`)
    if ((await readReachDetail(db, actor.tenantId)) === 'counts_only')
      throw forbidden('This tenant shows reading counts only (reach_detail: counts_only)', 'reach_counts_only')
    const t = actor.tenantId
    const base = db
      .selectFrom('users as a')
      .innerJoin(
        sql<{
          target_type: string
          target_id: number
        }>`(select ${decl.alias}::text as target_type, ${id}::bigint as target_id)`.as('art'),
        (join) => join.onTrue(),
      )
      .leftJoin('roles as ar', (join) => join.onRef('ar.id', '=', 'a.role_id').on('ar.tenant_id', '=', t))
      .leftJoin(
        sql<{
          user_id: number
          seen_at: string | null
          confirmed_at: string | null
        }>`(select r.user_id, r.seen_at, r.confirmed_at from content_reads r
          where r.tenant_id = ${t} and r.target_type = ${decl.alias} and r.target_id = ${id})`.as('ard'),
        (join) => join.onRef('ard.user_id', '=', 'a.id'),
      )
      .where('a.tenant_id', '=', t)
      .where(sql<boolean>`a.id in (${audienceSql(t, id)})`)
    const ctx: QueryContext = {
      db,
      tenantId: t,
      actor,
      flags: { requiresConfirmation: row.requires_reading_confirmation === true },
    }
    return { base, ctx }
  }

  /**
   * Reminds the users still pending (set-based: one insert records them, one fan-out notifies them),
   * at most once per record per 24 hours (429 otherwise, with `Retry-After`).
   */
  async function remind(db: Db, actor: Actor, id: number) {
    const row = await editable(db, actor, id)
    if (row.requires_reading_confirmation !== true)
      throw new AppError(
        422,
        'confirmation_not_required',
        `This ${content.label.toLowerCase()} asks for no confirmation`,
      )
    return db.transaction().execute(async (trx) => {
      const sent = await remindPending(trx, actor.tenantId, row, actor.userId)
      if ('reminder' in sent) return sent.reminder
      throw new AppError(429, 'reminder_too_soon', 'A reminder for this was sent within the last 24 hours', undefined, {
        'retry-after': String(sent.retryAfter),
      })
    })
  }

  /**
   * Claims the record's reminder (none within 24 hours: one conditional update decides) and records
   * and notifies the pending audience; `actorId` null for the automatic reminder at the due time.
   */
  async function remindPending(
    trx: Db,
    t: number,
    row: ContentRow,
    actorId: number | null,
  ): Promise<{ reminder: { id: number; recipients: number; created_at: string } } | { retryAfter: number }> {
    const id = row.id
    const { rows: claimed } = await sql<{ retry_after: number | null; claimed: boolean }>`
      with claim as (
        update ${table} set reminded_at = now() where tenant_id = ${t} and id = ${id}
          and (reminded_at is null or reminded_at <= now() - interval '24 hours') returning id)
      select exists (select 1 from claim) as claimed,
        (select ceil(extract(epoch from (p.reminded_at + interval '24 hours' - now())))::int
          from ${table} p where p.tenant_id = ${t} and p.id = ${id}) as retry_after`.execute(trx)
    if (!claimed[0].claimed) return { retryAfter: Math.max(1, claimed[0].retry_after ?? 1) }
    // three plain statements, not one with writing CTEs: each is routed whole to the tenant's shard on
    // Citus (the recipients' insert … select reads colocated tables and takes tenant_id from users)
    const { rows: created } = await sql<{ id: number; created_at: string }>`
      insert into content_reminders (tenant_id, target_type, target_id, actor_id)
      values (${t}, ${decl.alias}, ${id}, ${actorId}) returning id, created_at`.execute(trx)
    const reached = await sql`
      insert into content_reminder_recipients (tenant_id, reminder_id, user_id)
      select pu.tenant_id, ${created[0].id}::bigint, pu.id from users pu
      where pu.tenant_id = ${t} and pu.id in (${audienceSql(t, id)})
        and not exists (select 1 from content_reads r where r.tenant_id = ${t} and r.target_type = ${decl.alias}
          and r.target_id = ${id} and r.user_id = pu.id and r.confirmed_at is not null)
        and pu.id is distinct from ${actorId}::bigint`.execute(trx)
    const reminder = { ...created[0], recipients: Number(reached.numAffectedRows ?? 0) }
    await sql`update content_reminders set recipients = ${reminder.recipients}
      where tenant_id = ${t} and id = ${reminder.id}`.execute(trx)
    if (reminder.recipients > 0) await notices.reminded(trx, t, row, reminder.id)
    return { reminder }
  }

  return { publishIfDue, remindIfDue, afterWrite, markSeen, confirm, reach, reachUsers, remind, audienceSql }
}

export type Reading = ReturnType<typeof defineReading>
