import { sql } from 'kysely'

/** The row's version: `updated_at` to the microsecond, as a weak ETag. */
export const versionColumn = (alias: string) =>
  sql<string>`(extract(epoch from ${sql.ref(`${alias}.updated_at`)}) * 1000000)::bigint::text`.as('version')

/** A list's page: where it starts, how many, and the ORDER BY column and direction (scim.resources' page and sortOf). */
export interface ListPage {
  offset: number
  limit: number
  sortColumn: string
  direction: 'asc' | 'desc'
}

/** A list's total and its page, read side by side; no rows read for a page of none (`count=0`). */
export async function totalAndPage<R>(
  total: () => Promise<{ total: unknown }>,
  rows: () => Promise<R[]>,
  page: ListPage,
): Promise<{ total: number; rows: R[] }> {
  const [counted, read] = await Promise.all([total(), page.limit === 0 ? Promise.resolve([]) : rows()])
  return { total: Number(counted.total), rows: read }
}
