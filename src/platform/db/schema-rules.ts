import { sql } from 'kysely'
import type { Db } from './schema.js'
import { type TableClass, tableClass } from './table-classes.js'

export interface CatalogTable {
  schema: string
  table: string
  kind: TableClass | undefined
}

/** Every ordinary table of the database outside the system schemas and extensions, with its class. */
export async function catalogTables(db: Db): Promise<CatalogTable[]> {
  const { rows } = await sql<{ schema: string; table: string }>`
    select n.nspname as schema, c.relname as table
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where c.relkind in ('r', 'p') and not c.relispartition
      and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_%'
      and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
    order by 1, 2`.execute(db)
  return rows.map((row) => ({ ...row, kind: tableClass(row.schema, row.table) }))
}

const qualified = (schema: string, table: string) => (schema === 'public' ? table : `${schema}.${table}`)

/**
 * What keeps this schema from being distributed by tenant with Citus, one line per broken rule,
 * naming the table and the constraint or index (empty when every rule holds; docs/citus.md).
 */
export async function schemaRuleViolations(db: Db): Promise<string[]> {
  const violations: string[] = []
  const tables = await catalogTables(db)
  const kindOf = new Map(tables.map((t) => [qualified(t.schema, t.table), t.kind]))
  for (const t of tables) {
    if (!t.kind)
      violations.push(
        `${qualified(t.schema, t.table)}: table is not classified (add it to TABLE_CLASSES in src/platform/db/table-classes.ts)`,
      )
  }
  const tenant = tables.filter((t) => t.kind === 'tenant' && t.schema === 'public').map((t) => t.table)

  const { rows: columns } = await sql<{ table: string; notnull: boolean }>`
    select c.relname as table, a.attnotnull as notnull
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and a.attname = 'tenant_id' and not a.attisdropped`.execute(db)
  const tenantColumn = new Map(columns.map((c) => [c.table, c]))
  for (const table of tenant) {
    const column = tenantColumn.get(table)
    if (!column) violations.push(`${table}: tenant table has no tenant_id column`)
    else if (!column.notnull) violations.push(`${table}: tenant_id must be not null`)
  }

  // unique indexes cover primary keys and unique constraints (each is backed by one)
  const { rows: indexes } = await sql<{
    table: string
    index: string
    constraint: string | null
    primary: boolean
    has_tenant: boolean
  }>`
    select c.relname as table, ic.relname as index, con.conname as constraint, i.indisprimary as primary,
      exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'tenant_id' and a.attnum = any (i.indkey::int2[])) as has_tenant
    from pg_index i
    join pg_class c on c.oid = i.indrelid join pg_namespace n on n.oid = c.relnamespace
    join pg_class ic on ic.oid = i.indexrelid
    left join pg_constraint con on con.conindid = i.indexrelid and con.conrelid = c.oid and con.contype in ('p', 'u', 'x')
    where n.nspname = 'public' and (i.indisunique or i.indisexclusion)
    order by 1, 2`.execute(db)
  for (const table of tenant) {
    const own = indexes.filter((i) => i.table === table)
    if (!own.some((i) => i.primary)) violations.push(`${table}: tenant table has no primary key`)
    for (const index of own.filter((i) => !i.has_tenant)) {
      const what = index.primary ? 'primary key' : index.constraint ? 'unique constraint' : 'unique index'
      violations.push(`${table}: ${what} ${index.constraint ?? index.index} does not contain tenant_id`)
    }
  }

  const { rows: foreignKeys } = await sql<{
    schema: string
    table: string
    ref_schema: string
    ref_table: string
    constraint: string
    on_delete: string
    on_update: string
    pairs_tenant: boolean
  }>`
    select n.nspname as schema, c.relname as table, rn.nspname as ref_schema, r.relname as ref_table, con.conname as constraint,
      con.confdeltype::text as on_delete, con.confupdtype::text as on_update,
      exists (
        select 1 from unnest(con.conkey, con.confkey) as k(col, ref_col)
        join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.col
        join pg_attribute ra on ra.attrelid = con.confrelid and ra.attnum = k.ref_col
        where a.attname = 'tenant_id' and ra.attname = 'tenant_id') as pairs_tenant
    from pg_constraint con
    join pg_class c on c.oid = con.conrelid join pg_namespace n on n.oid = c.relnamespace
    join pg_class r on r.oid = con.confrelid join pg_namespace rn on rn.oid = r.relnamespace
    where con.contype = 'f'
    order by 2, 5`.execute(db)
  for (const fk of foreignKeys) {
    const from = qualified(fk.schema, fk.table)
    const to = qualified(fk.ref_schema, fk.ref_table)
    const [fromKind, toKind] = [kindOf.get(from), kindOf.get(to)]
    if (!fromKind || !toKind) continue // reported as unclassified above
    const name = `${from}: foreign key ${fk.constraint} (→ ${to})`
    if (fromKind === 'tenant' && toKind === 'tenant') {
      if (!fk.pairs_tenant) violations.push(`${name} does not include tenant_id on both sides`)
      // Citus: the distribution column must never be set to null or its default by a cascade
      else if (fk.on_delete === 'n' || fk.on_delete === 'd')
        violations.push(`${name}: ON DELETE SET NULL/SET DEFAULT is not allowed between tenant tables`)
      else if (fk.on_update !== 'a' && fk.on_update !== 'r')
        violations.push(`${name}: ON UPDATE must be NO ACTION or RESTRICT between tenant tables`)
    } else if (fromKind !== toKind && !(fromKind === 'tenant' && toKind === 'global')) {
      violations.push(`${name}: a ${fromKind} table may not reference a ${toKind} table`)
    }
  }

  // on Citus a trigger on a distributed table runs on the worker holding the shard: its NOTIFY never
  // reaches the coordinator's listeners, and its statements on other tables are not routed
  const { rows: triggers } = await sql<{ table: string; trigger: string }>`
    select c.relname as table, t.tgname as trigger
    from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and not t.tgisinternal
    order by 1, 2`.execute(db)
  for (const trigger of triggers.filter((t) => tenant.includes(t.table))) {
    violations.push(
      `${trigger.table}: trigger ${trigger.trigger} on a tenant table (send notices from the app: db/change-notices.ts)`,
    )
  }
  return violations
}
