import { type RawBuilder, type SelectQueryBuilder, sql } from 'kysely'

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

/**
 * GET /Users and GET /Groups: the rows of `base` the filter keeps, their total and one page of them
 * (`columns` selected, in the page's order, ties broken by `idColumn`).
 */
export function filteredPage<DB, TB extends keyof DB, O, R>(
  base: SelectQueryBuilder<DB, TB, O>,
  filter: RawBuilder<boolean> | undefined,
  columns: (where: SelectQueryBuilder<DB, TB, O>) => SelectQueryBuilder<DB, TB, R>,
  idColumn: string,
  page: ListPage,
) {
  const where = filter ? base.where(filter) : base
  return totalAndPage(
    // generic over the table, the selection's type is not inferred: the count is `total`
    () =>
      where
        .select((eb) => eb.fn.countAll<number>().as('total'))
        .$castTo<{ total: number }>()
        .executeTakeFirstOrThrow(),
    () =>
      columns(where)
        .orderBy(sql.ref(page.sortColumn), page.direction)
        .orderBy(sql.ref(idColumn), page.direction)
        .limit(page.limit)
        .offset(page.offset)
        .execute(),
    page,
  )
}
