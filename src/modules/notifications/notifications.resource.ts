import { sql } from 'kysely'
import { composedTable } from '../../platform/composition.js'
import { invalidField } from '../../platform/http/errors.js'
import { defineResource, type QueryContext } from '../../platform/query/resource.js'
import { groupBy } from '../../platform/group-by.js'

/** Loads the producing records of one targetable alias by ID (e.g. genericNotification → its send). */
export type TargetableLoader = (ctx: QueryContext, ids: number[]) => Promise<Map<number, unknown>>

declare module '../../platform/app-module.js' {
  interface AppModule {
    /** How the `targetable` relation of this module's notifications is loaded, by targetable alias. */
    notificationTargetables?: Record<string, TargetableLoader>
  }
}

const targetableLoaders = composedTable(
  (modules) => new Map(modules.flatMap((module) => Object.entries(module.notificationTargetables ?? {}))),
)

const BASIC_USER_COLUMNS = [
  'id',
  'username',
  'first_name',
  'last_name',
  'active',
  'group_account',
  'role_id',
  'lang_id',
  'profile_picture',
  'created_at',
  'updated_at',
  'deleted_at',
  'blacked_out_at',
] as const

/** Fields, filters and relations of a notification (contract 40); always scoped to the requester. */
export const notificationResource = defineResource<{ notifiable_id: number; targetable_ref: string }>({
  name: 'notification',
  alias: 'n',
  uniqueKey: 'id',
  defaultSort: ['-created_at', '-id'],
  fields: {
    id: { type: 'uuid' },
    type: { type: 'string' },
    notifiable_type: { type: 'string', filterable: false },
    notifiable_id: { type: 'id', filterable: false },
    targetable_type: { type: 'string' },
    targetable_id: { type: 'id' },
    data: { type: 'json', filterable: false },
    seen_at: { type: 'timestamp' },
    read_at: { type: 'timestamp' },
    created_at: { type: 'timestamp' },
    updated_at: { type: 'timestamp' },
    // Key of the polymorphic `targetable` relation; fetched only when that relation is requested.
    targetable_ref: {
      type: 'string',
      internal: true,
      filterable: false,
      sortable: false,
      sql: sql`n.targetable_type || ':' || n.targetable_id`,
    },
  },
  customFilters: {
    unread: (value) => {
      const flag = typeof value === 'string' ? value.toLowerCase() : value
      if (flag === 'true' || flag === '1' || flag === true) return sql<boolean>`n.read_at is null`
      if (flag === 'false' || flag === '0' || flag === false) return sql<boolean>`n.read_at is not null`
      throw invalidField('filter.unread', 'must be true or false')
    },
  },
  relations: {
    notifiable: {
      key: 'notifiable_id',
      many: false,
      load: async (ctx, ids) => {
        const rows = await ctx.db
          .selectFrom('users')
          .select([...BASIC_USER_COLUMNS])
          .where('tenant_id', '=', ctx.tenantId)
          .where('id', 'in', ids)
          .execute()
        return new Map(rows.map((r) => [r.id, { ...r, full_name: `${r.first_name} ${r.last_name}`.trim() }]))
      },
    },
    targetable: {
      key: 'targetable_ref',
      many: false,
      load: async (ctx, refs) => {
        const byAlias = groupBy(
          refs,
          (ref) => ref.slice(0, ref.lastIndexOf(':')),
          (ref) => Number(ref.slice(ref.lastIndexOf(':') + 1)),
        )
        const result = new Map<unknown, unknown>()
        for (const [alias, ids] of byAlias) {
          const loader = targetableLoaders().get(alias)
          if (!loader) continue // producing module not installed: relation is null
          for (const [id, value] of await loader(ctx, ids)) result.set(`${alias}:${id}`, value)
        }
        return result
      },
    },
  },
})

/** Notification settings: read-only delivery categories seeded per tenant. */
export const notificationSettingResource = defineResource({
  name: 'notificationSetting',
  alias: 's',
  uniqueKey: 'id',
  defaultSort: ['id'],
  fields: {
    id: { type: 'id' },
    key: { type: 'string' },
    sort_number: { type: 'integer' },
  },
})
