import { sql } from 'kysely'
import type { Db } from './schema.js'
import { catalogTables, schemaRuleViolations } from './schema-rules.js'
import type { TableClass } from './table-classes.js'

export interface PlanStep {
  table: string
  kind: TableClass | 'unclassified'
  action: 'distribute' | 'reference' | 'none'
  /** What the step does or why nothing is done, for people. */
  detail: string
  /** The Citus call that carries it out, when there is one. */
  statement?: string
}

/** A foreign key between two tenant tables, one of them not distributed yet (see `distribute`). */
export interface HeldForeignKey {
  table: string
  constraint: string
  /** `pg_get_constraintdef`: how it is added again. */
  definition: string
}

export interface DistributionPlan {
  citus: boolean
  violations: string[]
  /** Triggers on tables Citus would distribute or replicate: it refuses them (they would run on the workers). */
  triggers: string[]
  steps: PlanStep[]
  /** Dropped before the tenant tables are distributed and added again after them, in the same transaction. */
  heldForeignKeys: HeldForeignKey[]
}

const quoteLiteral = (text: string) => `'${text.replace(/'/g, "''")}'`

async function citusInstalled(db: Db): Promise<boolean> {
  const { rows } = await sql<{
    installed: boolean
  }>`select exists (select 1 from pg_extension where extname = 'citus') as installed`.execute(db)
  return rows[0].installed
}

/** What Citus already knows: hash-distributed (`h`) and reference (`n` with replication model `t`) tables. */
async function citusPlacement(db: Db): Promise<Map<string, 'distributed' | 'reference' | 'other'>> {
  const { rows } = await sql<{ table: string; method: string; model: string }>`
    select logicalrelid::regclass::text as table, partmethod::text as method, repmodel::text as model from pg_dist_partition`.execute(
    db,
  )
  return new Map(
    rows.map((r) => [
      r.table,
      r.method === 'h' ? 'distributed' : r.method === 'n' && r.model === 't' ? 'reference' : 'other',
    ]),
  )
}

/** Tenant tables ordered so that every table comes after the tenant tables it references (Citus needs them distributed first). */
async function inReferenceOrder(db: Db, tables: string[]): Promise<string[]> {
  const { rows } = await sql<{ table: string; ref: string }>`
    select conrelid::regclass::text as table, confrelid::regclass::text as ref from pg_constraint where contype = 'f'`.execute(
    db,
  )
  const ordered: string[] = []
  const visit = (table: string, path: Set<string>) => {
    if (ordered.includes(table) || path.has(table)) return
    path.add(table)
    for (const r of rows) if (r.table === table && r.ref !== table && tables.includes(r.ref)) visit(r.ref, path)
    ordered.push(table)
  }
  for (const table of [...tables].sort()) visit(table, new Set())
  return ordered
}

/**
 * The plan for `workplace db distribute`: every table of the schema with its class and what to do.
 * Reference tables first (tenant tables reference them), then tenant tables in reference order, all
 * colocated with the first one, then the coordinator-only tables. Steps already done are `none`.
 */
export async function distributionPlan(db: Db): Promise<DistributionPlan> {
  const citus = await citusInstalled(db)
  const placement = citus ? await citusPlacement(db) : new Map<string, string>()
  const tables = await catalogTables(db)
  const name = (t: { schema: string; table: string }) => (t.schema === 'public' ? t.table : `${t.schema}.${t.table}`)
  const steps: PlanStep[] = []

  for (const t of tables.filter((t) => t.kind === 'global')) {
    const table = name(t)
    steps.push(
      placement.get(table) === 'reference'
        ? { table, kind: 'global', action: 'none', detail: 'already a reference table' }
        : {
            table,
            kind: 'global',
            action: 'reference',
            detail: 'make a reference table (a copy on every node)',
            statement: `select create_reference_table(${quoteLiteral(table)})`,
          },
    )
  }
  const tenant = await inReferenceOrder(db, tables.filter((t) => t.kind === 'tenant').map(name))
  const pending = tenant.filter((table) => placement.get(table) !== 'distributed')
  let anchor = tenant.find((table) => placement.get(table) === 'distributed')
  for (const table of tenant) {
    if (placement.get(table) === 'distributed') {
      steps.push({ table, kind: 'tenant', action: 'none', detail: 'already distributed by tenant_id' })
      continue
    }
    const colocate = anchor ?? 'default'
    steps.push({
      table,
      kind: 'tenant',
      action: 'distribute',
      detail: anchor
        ? `distribute by tenant_id, colocated with ${anchor}`
        : 'distribute by tenant_id (the first: the others are colocated with it)',
      statement: `select create_distributed_table(${quoteLiteral(table)}, 'tenant_id', colocate_with => ${quoteLiteral(colocate)})`,
    })
    anchor ??= table
  }
  for (const t of tables.filter((t) => t.kind === 'local'))
    steps.push({ table: name(t), kind: 'local', action: 'none', detail: 'stays on the coordinator' })
  for (const t of tables.filter((t) => !t.kind))
    steps.push({
      table: name(t),
      kind: 'unclassified',
      action: 'none',
      detail: 'not classified: add it to src/platform/db/table-classes.ts',
    })

  const { rows: triggers } = await sql<{ table: string; trigger: string }>`
    select c.relname as table, tg.tgname as trigger from pg_trigger tg
    join pg_class c on c.oid = tg.tgrelid join pg_namespace n on n.oid = c.relnamespace
    where not tg.tgisinternal and n.nspname = 'public' order by 1, 2`.execute(db)
  const placed = new Set(steps.filter((s) => s.kind === 'tenant' || s.kind === 'global').map((s) => s.table))
  const blocking = triggers.filter((t) => placed.has(t.table)).map((t) => `${t.table}: trigger ${t.trigger}`)
  return {
    citus,
    violations: await schemaRuleViolations(db),
    triggers: blocking,
    steps,
    heldForeignKeys: await heldForeignKeys(db, tenant, pending),
  }
}

/**
 * Foreign keys between two different tenant tables of which at least one is not distributed yet.
 * Citus cannot distribute them one by one: once `tenants` is a reference table, every table that
 * references it is a Citus local table, and distributing one of two such tables connected by a
 * foreign key fails either way round ("foreign keys from reference tables and local tables to
 * distributed tables are not supported", or "relations are not colocated"). So they are dropped,
 * the tables distributed, and the keys added again, all in one transaction.
 */
async function heldForeignKeys(db: Db, tenant: string[], pending: string[]): Promise<HeldForeignKey[]> {
  if (pending.length === 0) return []
  const { rows } = await sql<{ table: string; ref: string; constraint: string; definition: string }>`
    select c.relname as table, r.relname as ref, con.conname as constraint, pg_get_constraintdef(con.oid) as definition
    from pg_constraint con
    join pg_class c on c.oid = con.conrelid join pg_class r on r.oid = con.confrelid
    where con.contype = 'f' and con.conrelid <> con.confrelid
      and c.relnamespace = 'public'::regnamespace and r.relnamespace = 'public'::regnamespace
    order by 1, 3`.execute(db)
  return rows
    .filter(
      (fk) =>
        tenant.includes(fk.table) &&
        tenant.includes(fk.ref) &&
        (pending.includes(fk.table) || pending.includes(fk.ref)),
    )
    .map(({ table, constraint, definition }) => ({ table, constraint, definition }))
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`

/**
 * Carries out the plan: each reference table on its own (a re-run continues), then every pending
 * tenant table in one transaction, the foreign keys between tenant tables dropped before and added
 * again after (see `heldForeignKeys`): either every tenant table is distributed, or none is.
 */
export async function distribute(db: Db, plan: DistributionPlan, onStep: (step: PlanStep) => void): Promise<void> {
  for (const step of plan.steps.filter((s) => s.statement && s.kind !== 'tenant')) {
    await sql.raw(step.statement!).execute(db)
    onStep(step)
  }
  const tenantSteps = plan.steps.filter((s) => s.statement && s.kind === 'tenant')
  if (tenantSteps.length > 0) await distributeTenantTables(db, plan, tenantSteps, onStep)
  await dropLocalCopies(
    db,
    plan.steps.filter((s) => s.statement).map((s) => s.table),
  )
}

async function distributeTenantTables(
  db: Db,
  plan: DistributionPlan,
  tenantSteps: PlanStep[],
  onStep: (step: PlanStep) => void,
): Promise<void> {
  const done: PlanStep[] = []
  await db.transaction().execute(async (trx) => {
    for (const fk of plan.heldForeignKeys)
      await sql.raw(`alter table ${quoteIdent(fk.table)} drop constraint ${quoteIdent(fk.constraint)}`).execute(trx)
    for (const step of tenantSteps) {
      await sql.raw(step.statement!).execute(trx)
      done.push(step)
    }
    for (const fk of plan.heldForeignKeys)
      await sql
        .raw(`alter table ${quoteIdent(fk.table)} add constraint ${quoteIdent(fk.constraint)} ${fk.definition}`)
        .execute(trx)
  })
  for (const step of done) onStep(step)
}

/**
 * Distributing or replicating a table that holds rows copies them to the shards and leaves the
 * originals on the coordinator, invisible but on disk. Removed once every table is placed (the
 * truncation also reaches the tables referencing it, whose rows are all in shards by then).
 */
async function dropLocalCopies(db: Db, tables: string[]): Promise<void> {
  for (const table of tables)
    await sql`select truncate_local_data_after_distributing_table(${table}::regclass)`.execute(db)
}

export function formatPlan(plan: DistributionPlan): string {
  const width = Math.max(5, ...plan.steps.map((s) => s.table.length))
  const lines = plan.steps.map(
    (s) => `${s.table.padEnd(width)}  ${s.kind.padEnd(12)}  ${s.action.padEnd(10)}  ${s.detail}`,
  )
  const held =
    plan.heldForeignKeys.length === 0
      ? []
      : [
          '',
          `The tenant tables are distributed in one transaction; these ${plan.heldForeignKeys.length} foreign keys between them are dropped before and added again after:`,
          ...plan.heldForeignKeys.map((fk) => `  ${fk.table}.${fk.constraint}: ${fk.definition}`),
        ]
  return (
    [`${'table'.padEnd(width)}  ${'kind'.padEnd(12)}  ${'action'.padEnd(10)}  detail`, ...lines, ...held].join('\n') +
    '\n'
  )
}

const NO_CITUS = `The citus extension is not installed in this database, so there is nothing to distribute.
On a Citus cluster: CREATE EXTENSION citus on the coordinator and every worker, add the workers
(SELECT citus_add_node(host, port)), point DATABASE_URL at the coordinator, run \`workplace migrate\`,
then \`workplace db distribute\` again (docs/citus.md). \`--dry-run\` shows the plan without Citus.
`

/** `workplace db distribute [--dry-run]`: prints the plan, or carries it out; returns the exit code. */
export async function distributeCommand(
  db: Db,
  { dryRun }: { dryRun: boolean },
  out: (text: string) => void,
): Promise<number> {
  const plan = await distributionPlan(db)
  if (plan.violations.length > 0) {
    out(
      `The schema breaks the rules of distribution by tenant (docs/citus.md):\n${plan.violations.map((v) => `  ${v}\n`).join('')}`,
    )
    return 1
  }
  const triggerNote =
    plan.triggers.length === 0
      ? ''
      : `Citus refuses triggers on distributed and reference tables; these must go first (docs/citus.md, "Triggers"):\n${plan.triggers.map((t) => `  ${t}\n`).join('')}`
  if (dryRun) {
    out(formatPlan(plan))
    out(triggerNote)
    if (!plan.citus)
      out('(citus is not installed in this database: this is what would be done on a Citus coordinator)\n')
    return 0
  }
  if (!plan.citus) {
    out(NO_CITUS)
    return 1
  }
  if (plan.triggers.length > 0) {
    out(triggerNote)
    return 1
  }
  const pending = plan.steps.filter((s) => s.statement)
  if (pending.length === 0) {
    out('Every table is already placed: nothing to do.\n')
    return 0
  }
  await distribute(db, plan, (step) => out(`${step.table}: ${step.detail}\n`))
  out(`Done: ${pending.length} table(s) placed.\n`)
  return 0
}
