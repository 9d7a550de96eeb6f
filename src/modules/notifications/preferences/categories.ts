import { type RawBuilder, sql } from 'kysely'

/**
 * Every notification type belongs to one delivery category: a notification setting of the tenant
 * (contract 40's defaults `general`, `infoboard`, `manuals`, `tasks`, `forms`, `calendar`). Channel
 * preferences are kept per category. A type is mapped by its prefix, so a new type of a module lands in
 * that module's category without a change here; anything else is `general`. Table in docs/notifications-delivery.md.
 */
const CATEGORY_BY_PREFIX: Array<[prefix: string, category: string]> = [
  ['infoboard', 'infoboard'],
  ['manual', 'manuals'],
  ['task', 'tasks'],
  ['form', 'forms'],
  ['calendar', 'calendar'],
]

export const FALLBACK_CATEGORY = 'general'

export function categoryOf(notificationType: string): string {
  return CATEGORY_BY_PREFIX.find(([prefix]) => notificationType.startsWith(prefix))?.[1] ?? FALLBACK_CATEGORY
}

/** The same mapping as SQL over a `type` column, for set-based checks over many records. */
export function categorySql(typeColumn: string): RawBuilder<string> {
  const ref = sql.ref(typeColumn)
  return sql<string>`case ${sql.join(
    CATEGORY_BY_PREFIX.map(([prefix, category]) => sql`when ${ref} like ${`${prefix}%`} then ${category}`),
    sql` `,
  )} else ${FALLBACK_CATEGORY} end`
}
