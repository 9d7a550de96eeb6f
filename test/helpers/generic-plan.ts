import { sql } from 'kysely'
import type { Db } from '../../src/platform/db/schema.js'

/** An EXPLAIN EXECUTE literal: EXPLAIN EXECUTE takes no bind parameters (numbers, arrays of numbers, text). */
function literal(value: unknown): string {
  if (Array.isArray(value)) return `'{${value.map(Number).join(',')}}'`
  if (typeof value === 'number') return String(value)
  return `'${String(value).replace(/'/g, "''")}'`
}

/**
 * The plan PostgreSQL keeps for `statement` in the API's pool: its generic plan (planned without the
 * values, `plan_cache_mode=force_generic_plan`, as the pool's named statements run), as EXPLAIN text.
 */
export async function genericPlanOf(
  db: Db,
  statement: { sql: string; parameters: readonly unknown[] },
): Promise<string> {
  return db.connection().execute(async (conn) => {
    await sql`set plan_cache_mode = force_generic_plan`.execute(conn)
    try {
      await conn.executeQuery({
        sql: `prepare generic_plan_probe as ${statement.sql}`,
        parameters: [],
        query: null as never,
      })
      const { rows } = await conn.executeQuery<{ 'QUERY PLAN': string }>({
        sql: `explain execute generic_plan_probe(${statement.parameters.map(literal).join(', ')})`,
        parameters: [],
        query: null as never,
      })
      return rows.map((r) => r['QUERY PLAN']).join('\n')
    } finally {
      await sql`deallocate generic_plan_probe`.execute(conn).catch(() => undefined)
      await sql`reset plan_cache_mode`.execute(conn)
    }
  })
}
