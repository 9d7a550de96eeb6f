/**
 * The Citus side of the routable-statements check (docs/citus.md): in `npm run test:citus`, every
 * distinct statement a request sent is explained on the coordinator with the values of its first
 * execution, and fails the run unless Citus sends it whole to one worker (a fast-path or single-shard
 * router query). The parser-side check (routable-statements.ts) proves a tenant filter is there; this one
 * proves Citus plans it as hoped: no intermediate result shipped from the coordinator, no subquery
 * evaluated there, no task on more than one shard, no two-phase commit.
 */
import pg from 'pg'
import { loadModule, parseSync } from 'libpg-query'
import { tableClass } from '../../src/platform/db/table-classes.js'
import { ALLOWED_CROSS_TENANT, type CapturedStatement } from './routable-statements.js'

export interface UnroutedStatement {
  sql: string
  why: string[]
}

/**
 * Statements Citus does not route whole yet, each named with the form it needs (docs/citus.md,
 * "Statements routed whole"): printed on every run, never failing it. Matched on the SQL text with
 * whitespace collapsed. Anything not listed fails the run; an entry whose statement was not sent is
 * left for its author to remove when the statement is reshaped.
 */
export const NOT_YET_ROUTED_WHOLE: ReadonlyArray<{ name: string; needs: string; sql: RegExp }> = []

const EXPLAINED = ['SelectStmt', 'InsertStmt', 'UpdateStmt', 'DeleteStmt']
const WRITES = ['InsertStmt', 'UpdateStmt', 'DeleteStmt']

/** Why Citus does not route the plan `lines` (EXPLAIN's text) whole to one worker; empty when it does. */
export function unroutedReasons(lines: string[]): string[] {
  const plan = lines.join('\n')
  const why: string[] = []
  if (/Distributed Subplan/.test(plan))
    why.push('intermediate result: a subplan is evaluated first and its rows shipped (Distributed Subplan)')
  const method = /INSERT\/SELECT method: (.+)/.exec(plan)?.[1]
  if (method) why.push(`intermediate result: INSERT … SELECT by ${method.trim()}`)
  const tasks = [...plan.matchAll(/Task Count: (\d+)/g)].map((m) => Number(m[1]))
  if (tasks.some((n) => n > 1)) why.push(`multi-shard task (Task Count: ${Math.max(...tasks)})`)
  const scans = lines.filter((l) => /Custom Scan \(Citus/.test(l)).length
  if (scans > 1 || (scans === 1 && !/^\s*Custom Scan \(Citus/.test(lines[0] ?? '')))
    why.push('coordinator-side evaluation: the Citus scan is not the whole plan')
  return why
}

/** Reference (`global`) tables the statement writes: their writes are a two-phase commit on every node. */
function referenceWrites(parsed: unknown): string[] {
  const found = new Set<string>()
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk)
    if (!node || typeof node !== 'object') return
    for (const [key, value] of Object.entries(node)) {
      const relation = WRITES.includes(key)
        ? (value as { relation?: { schemaname?: string; relname?: string } }).relation
        : undefined
      if (relation?.relname && tableClass(relation.schemaname ?? 'public', relation.relname) === 'global')
        found.add(relation.relname)
      walk(value)
    }
  }
  walk(parsed)
  return [...found]
}

function topLevelKind(parsed: { stmts?: Array<{ stmt?: Record<string, unknown> }> }): string | undefined {
  const stmts = parsed.stmts ?? []
  return stmts.length === 1 ? Object.keys(stmts[0]?.stmt ?? {})[0] : undefined
}

/** Explains every captured read and write on the coordinator of `url`; returns those not routed whole. */
export async function unroutedOnCitus(
  url: string,
  statements: Iterable<CapturedStatement>,
): Promise<{ explained: number; unrouted: UnroutedStatement[]; pending: Array<UnroutedStatement & { name: string }> }> {
  await loadModule()
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const unrouted: UnroutedStatement[] = []
  const pending: Array<UnroutedStatement & { name: string }> = []
  let explained = 0
  try {
    for (const { sql, values } of statements) {
      const parsed = parseSync(sql) as { stmts?: Array<{ stmt?: Record<string, unknown> }> }
      const kind = topLevelKind(parsed)
      if (!kind || !EXPLAINED.includes(kind)) continue
      explained++
      const why = referenceWrites(parsed).map((t) => `two-phase commit: writes the reference table ${t}`)
      try {
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`explain (costs off) ${sql}`, values)
        why.push(...unroutedReasons(rows.map((r) => r['QUERY PLAN'])))
      } catch (error) {
        why.push(`EXPLAIN failed: ${(error as Error).message}`)
      }
      if (why.length === 0) continue
      const collapsed = sql.replace(/\s+/g, ' ').trim()
      // meant to span tenants, each named with its reason (the same list as the parser-side check)
      if (ALLOWED_CROSS_TENANT.some((allowed) => allowed.sql.test(collapsed))) continue
      const known = NOT_YET_ROUTED_WHOLE.find((entry) => entry.sql.test(collapsed))
      if (known) pending.push({ name: known.name, sql: collapsed, why })
      else unrouted.push({ sql: collapsed, why })
    }
  } finally {
    await client.end()
  }
  return { explained, unrouted, pending }
}
