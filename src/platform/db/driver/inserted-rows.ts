import { type RawBuilder, sql } from 'kysely'
import { onCitus } from '../citus.js'
import type { Db } from '../schema.js'

/** A column of the rows to insert: its name in the row source, its SQL type, its values (one per row). */
export interface RowsColumn {
  name: string
  type: string
  values: readonly unknown[]
}

export interface InsertedRows {
  /** The row source's alias (`a` in `as a(…)`). */
  alias: string
  /** Values the same for every row, first in the insert's column list (e.g. the tenant id). */
  leading: RawBuilder<unknown>[]
  columns: RowsColumn[]
  /** The rows keep the order of the values (an insert's RETURNING follows it). */
  ordered?: boolean
  /** The rows are inserted only when this holds (a select: Citus cannot route it whole). */
  onlyIf?: RawBuilder<boolean>
}

// a VALUES list takes one parameter per value; PostgreSQL allows 65,535 per statement
const MAX_VALUES_PARAMETERS = 30_000

/**
 * The rows of an insert, after its column list (the leading columns, then `columns` in order).
 *
 * On one PostgreSQL: `select … from unnest($1::type[], …)`, one statement text whatever the number of
 * rows (prepared once per connection, decision 0005). On a Citus coordinator: `values (…), (…)`, one
 * text per number of rows: Citus evaluates every `insert … select` on the coordinator and ships its rows
 * to the worker as an intermediate result, while it sends an `insert … values` whole to the tenant's
 * worker (docs/citus.md, "Statements routed whole"). Chosen here once for every caller.
 */
export function insertedRows(rows: InsertedRows): RawBuilder<unknown> {
  const count = rows.columns[0]?.values.length ?? 0
  const parameters = count * (rows.columns.length + rows.leading.length)
  if (onCitus() && !rows.onlyIf && count > 0 && parameters <= MAX_VALUES_PARAMETERS) return valuesList(rows, count)
  return unnestSelect(rows)
}

function valuesList({ leading, columns }: InsertedRows, count: number): RawBuilder<unknown> {
  const row = (i: number) =>
    sql`(${sql.join([...leading, ...columns.map((c) => sql`${c.values[i]}::${sql.raw(c.type)}`)])})`
  return sql`values ${sql.join(Array.from({ length: count }, (_, i) => row(i)))}`
}

function unnestSelect({ alias, leading, columns, ordered, onlyIf }: InsertedRows): RawBuilder<unknown> {
  const a = sql.id(alias)
  const selected = [...leading, ...columns.map((c) => sql`${a}.${sql.id(c.name)}`)]
  const arrays = columns.map((c) => sql`${c.values}::${sql.raw(c.type)}[]`)
  const names = [...columns.map((c) => sql.id(c.name)), ...(ordered ? [sql.id('n')] : [])]
  return sql`select ${sql.join(selected)}
    from unnest(${sql.join(arrays)})${ordered ? sql` with ordinality` : sql``} as ${a}(${sql.join(names)})
    ${onlyIf ? sql`where ${onlyIf}` : sql``}${ordered ? sql` order by ${a}.n` : sql``}`
}

/**
 * The rows to insert, their condition (`onlyIf`, per row) read first on a Citus coordinator: a select
 * over their values list, routed whole, keeps the rows for which it holds, and the insert of those is
 * an `insert … values` (routed whole too) instead of an `insert … select` that Citus evaluates on the
 * coordinator. Undefined when no row is kept. Elsewhere the rows as they are: the condition stays in
 * the insert's select (one statement).
 */
export async function conditionReadFirst(db: Db, rows: InsertedRows): Promise<InsertedRows | undefined> {
  const count = rows.columns[0]?.values.length ?? 0
  if (!onCitus() || !rows.onlyIf || count === 0) return rows
  const a = sql.id(rows.alias)
  const row = (i: number) =>
    sql`(${sql.join([...rows.columns.map((c) => sql`${c.values[i]}::${sql.raw(c.type)}`), sql`${i}::int`])})`
  const names = [...rows.columns.map((c) => sql.id(c.name)), sql.id('n')]
  const { rows: kept } = await sql<{ n: number }>`select ${a}.n
    from (values ${sql.join(Array.from({ length: count }, (_, i) => row(i)))}) as ${a}(${sql.join(names)})
    where ${rows.onlyIf} order by ${a}.n`.execute(db)
  if (kept.length === 0) return undefined
  return {
    ...rows,
    onlyIf: undefined,
    columns: rows.columns.map((c) => ({ ...c, values: kept.map(({ n }) => c.values[n]) })),
  }
}
