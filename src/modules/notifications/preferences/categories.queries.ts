import { type RawBuilder, sql } from 'kysely'
import { CATEGORY_BY_PREFIX, FALLBACK_CATEGORY } from './categories.js'

/** The same mapping as SQL over a `type` column, for set-based checks over many records. */
export function categorySql(typeColumn: string): RawBuilder<string> {
  const ref = sql.ref(typeColumn)
  return sql<string>`case ${sql.join(
    CATEGORY_BY_PREFIX.map(([prefix, category]) => sql`when ${ref} like ${`${prefix}%`} then ${category}`),
    sql` `,
  )} else ${FALLBACK_CATEGORY} end`
}
