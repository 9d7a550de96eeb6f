import { sql } from 'kysely'
import type { Db } from '../../../src/platform/db/schema.js'

let tenantTables: Promise<string[]> | undefined

/**
 * Bookkeeping that every request changes by design, refused ones included: the fair-use limiter counts
 * each request against its budgets (decision 0023), and a session's last use (`session_activity`, for
 * "your sessions") is written behind by a timer, so its flush may land inside any request's check.
 * Neither holds data of the tenant's that a request could have changed.
 */
const REQUEST_BOOKKEEPING = new Set(['rate_limit_counters', 'session_activity'])

/** Every table of the public schema with a tenant_id column. */
export function listTenantTables(db: Db): Promise<string[]> {
  tenantTables ??= sql<{ table_name: string }>`
    select c.table_name from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name and t.table_type = 'BASE TABLE'
    where c.table_schema = 'public' and c.column_name = 'tenant_id' order by c.table_name`
    .execute(db)
    .then((r) => r.rows.map((row) => row.table_name).filter((table) => !REQUEST_BOOKKEEPING.has(table)))
  return tenantTables
}

/**
 * A digest per table of every row a tenant owns (plus its tenants row): two equal fingerprints mean
 * nothing of the tenant changed in between.
 */
export async function tenantFingerprint(db: Db, tenantId: number): Promise<Record<string, string>> {
  const tables = await listTenantTables(db)
  const parts = tables.map(
    (table) =>
      `select '${table}' as t, md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h from "${table}" x where x.tenant_id = ${Number(tenantId)}`,
  )
  parts.push(
    `select 'tenants' as t, md5(coalesce(string_agg(x::text, '|'), '')) as h from tenants x where x.id = ${Number(tenantId)}`,
  )
  const { rows } = await sql.raw<{ t: string; h: string }>(parts.join(' union all ')).execute(db)
  return Object.fromEntries(rows.map((r) => [r.t, r.h]))
}

/** The tables whose digest differs between two fingerprints. */
export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  return Object.keys({ ...before, ...after }).filter((t) => before[t] !== after[t])
}
