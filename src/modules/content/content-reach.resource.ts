import { sql } from 'kysely'
import { defineResource } from '../../platform/query/resource.js'
import { invalidField } from '../../platform/http/errors.js'

// The reach of a record that must be read: its counts and the per-person list (docs/content-reading.md).

/** Who may see which reach data (tenant setting `reach_detail`, decision docs/decisions/reach-detail.md). */
export type ReachDetail = 'named' | 'counts_only'
/** Departments with fewer people in the audience are left out of `by_department` under `counts_only`. */
export const SMALL_GROUP = 5

/** `{audience, seen, confirmed, pending, by_department}` of a record. */
export interface Reach {
  audience: number
  seen: number
  confirmed: number
  pending: number
  requires_reading_confirmation: boolean
  reach_detail: ReachDetail
  by_department: Array<{ id: number; name: string; audience: number; seen: number; confirmed: number; pending: number }>
}

/** A reach user's row (the per-person list), a list resource with the query conventions and CSV. */
export const reachUserResource = defineResource({
  name: 'reachUser',
  alias: 'a',
  uniqueKey: 'id',
  defaultSort: ['last_name', 'first_name', 'id'],
  fields: {
    id: { type: 'id' },
    username: { type: 'string', filterable: true, sortable: true },
    first_name: { type: 'string', filterable: true, sortable: true },
    last_name: { type: 'string', filterable: true, sortable: true },
    role_id: { type: 'id' },
    role: { type: 'string', sql: sql`ar.name` },
    departments: {
      type: 'string',
      sql: (tenantId) => sql`(select string_agg(ad.name, ', ' order by ad.name) from department_users adu
        join departments ad on ad.tenant_id = adu.tenant_id and ad.id = adu.department_id
        where adu.tenant_id = ${tenantId} and adu.user_id = a.id)`,
    },
    state: {
      type: 'string',
      sql: sql`case when ard.confirmed_at is not null then 'confirmed' when ard.seen_at is not null then 'seen' else 'unseen' end`,
    },
    seen_at: { type: 'timestamp', sql: sql`ard.seen_at`, sortable: true },
    confirmed_at: { type: 'timestamp', sql: sql`ard.confirmed_at`, sortable: true },
    reminded_at: {
      type: 'timestamp',
      sql: (tenantId) => sql`(select max(rm.created_at) from content_reminder_recipients rr
        join content_reminders rm on rm.tenant_id = rr.tenant_id and rm.id = rr.reminder_id
        where rr.tenant_id = ${tenantId} and rr.user_id = a.id and rm.target_type = art.target_type and rm.target_id = art.target_id)`,
    },
  },
  customFilters: {
    /** `filter[state]=pending|seen|confirmed` (pending: no confirmation yet, or not seen when none is asked). */
    state: (value, ctx) => {
      if (value === 'seen') return sql<boolean>`ard.seen_at is not null`
      if (value === 'confirmed') return sql<boolean>`ard.confirmed_at is not null`
      if (value === 'pending')
        return ctx.flags?.requiresConfirmation
          ? sql<boolean>`ard.confirmed_at is null`
          : sql<boolean>`ard.seen_at is null`
      throw invalidField('filter.state', 'must be one of: pending, seen, confirmed')
    },
  },
})
export const REACH_CSV_COLUMNS = [
  'id',
  'username',
  'first_name',
  'last_name',
  'role',
  'departments',
  'state',
  'seen_at',
  'confirmed_at',
  'reminded_at',
] as const
