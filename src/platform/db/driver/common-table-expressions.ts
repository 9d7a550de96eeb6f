import { type RawBuilder, sql } from 'kysely'

/** A named part of a statement's WITH: `[name, statement]`. */
export type CommonTableExpression = [name: string, statement: RawBuilder<unknown>]

/**
 * The WITH clause of `ctes` (nothing when there are none), e.g. writes that ride in one statement:
 * data-modifying CTEs run once and to completion whether or not the statement reads them.
 */
export function withClause(ctes: CommonTableExpression[]): RawBuilder<unknown> {
  if (ctes.length === 0) return sql``
  return sql`with ${sql.join(ctes.map(([name, statement]) => sql`${sql.id(name)} as (${statement})`))} `
}
