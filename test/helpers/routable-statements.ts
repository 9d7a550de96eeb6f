/**
 * The routable-statements check (docs/citus.md): every SQL statement an HTTP request of the test suite
 * sends must filter each tenant table it touches by `tenant_id = <one value>` (directly, or joined on
 * tenant_id to a table that is), so that Citus routes it to one shard. Statements are captured by a
 * wrapper around the test pool while a request runs (`inRequest`), written to STATEMENT_LOG_DIR, and
 * checked after the run with PostgreSQL's own parser (libpg-query); see test/run-tests.ts.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import fs from 'node:fs'
import path from 'node:path'
import type pg from 'pg'
import { loadModule, parseSync } from 'libpg-query'
import { tenantTables } from '../../src/platform/db/table-classes.js'

const requestScope = new AsyncLocalStorage<true>()

/** Runs `work` (an `app.inject`) so that the statements it sends are captured. */
export function inRequest<T>(work: () => T): T {
  return requestScope.run(true, work)
}

/** Whether the caller runs inside `inRequest` (an injected request of the test app). */
export const inRequestScope = (): boolean => requestScope.getStore() === true

/** The pool with `onStatement` called with the text (and values) of every statement its clients send. */
export function tappedPool(pool: pg.Pool, onStatement: (sql: string, values: unknown[]) => void): pg.Pool {
  const wrapped = new WeakMap<pg.PoolClient, pg.PoolClient>()
  const tap = (text: unknown, second: unknown) => {
    const config = text as { text?: unknown; values?: unknown }
    const sql = typeof text === 'string' ? text : config?.text
    const values = Array.isArray(second) ? second : Array.isArray(config?.values) ? config.values : []
    if (typeof sql === 'string') onStatement(sql, values as unknown[])
  }
  const connect = async () => {
    const client = await pool.connect()
    let proxy = wrapped.get(client)
    if (!proxy) {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown
      proxy = new Proxy(client, {
        get: (c, p, r) =>
          p === 'query' ? (...args: unknown[]) => (tap(args[0], args[1]), query(...args)) : Reflect.get(c, p, r),
      })
      wrapped.set(client, proxy)
    }
    return proxy
  }
  return new Proxy(pool, {
    get: (target, property, receiver) => (property === 'connect' ? connect : Reflect.get(target, property, receiver)),
  })
}

/** A captured statement: its text and the values of its first execution (for `EXPLAIN` on Citus). */
export interface CapturedStatement {
  sql: string
  values: unknown[]
}

/**
 * The pool with every statement sent during a request appended (once per text, with the values of its
 * first execution) to STATEMENT_LOG_DIR.
 */
export function capturingPool(pool: pg.Pool, logDir: string | undefined): pg.Pool {
  if (!logDir) return pool
  const file = path.join(logDir, `${process.pid}.jsonl`)
  const seen = new Set<string>()
  return tappedPool(pool, (sql, values) => {
    if (!requestScope.getStore() || seen.has(sql)) return
    seen.add(sql)
    const captured: CapturedStatement = { sql, values: values.map(asJsonParameter) }
    fs.appendFileSync(file, JSON.stringify(captured) + '\n')
  })
}

/** A value that survives JSON as the same parameter text (bytea as its hex form). */
const asJsonParameter = (value: unknown): unknown => (Buffer.isBuffer(value) ? `\\x${value.toString('hex')}` : value)

/**
 * Cross-tenant statements a request may send, each named with the reason. Matched on the SQL text
 * with whitespace collapsed.
 */
export const ALLOWED_CROSS_TENANT: ReadonlyArray<{ name: string; why: string; sql: RegExp }> = [
  {
    name: 'legacy token tenant',
    why: 'a token of the format before migration 0100 carries no tenant: its tenant is found by hash (docs/citus.md, "Access tokens")',
    sql: /^select "?tenant_id"? from "?access_tokens"? where "?token_hash"? = \$1$/,
  },
]

// ---- the check -------------------------------------------------------------------------------

type Node = any
interface Range {
  table: string
  alias: string
}
/** `isolated`: a subquery in a select list, which Citus routes only when it is pinned by a constant itself. */
interface Level {
  ranges: Range[]
  isolated: boolean
}

const STATEMENTS = ['SelectStmt', 'InsertStmt', 'UpdateStmt', 'DeleteStmt'] as const
const CONST = '#const'

class Analysis {
  readonly ranges: Range[] = []
  private readonly parent = new Map<string, string>()
  constructor(private readonly tenant: ReadonlySet<string>) {}

  find(key: string): string {
    let root = key
    while (this.parent.has(root) && this.parent.get(root) !== root) root = this.parent.get(root)!
    return root
  }
  union(a: string, b: string) {
    const [ra, rb] = [this.find(a), this.find(b)]
    if (ra !== rb) this.parent.set(ra, rb)
  }

  /** Walks any node; statements open a level of their own (isolated under a select list). */
  walk(node: Node, isolated = false): void {
    if (Array.isArray(node)) return node.forEach((n) => this.walk(n, isolated))
    if (!node || typeof node !== 'object') return
    for (const kind of STATEMENTS) if (node[kind]) return this.statement(kind, node[kind], isolated)
    for (const value of Object.values(node)) this.walk(value, isolated)
  }

  private statement(kind: (typeof STATEMENTS)[number], stmt: Node, isolated: boolean) {
    const level: Level = { ranges: [], isolated }
    if (kind === 'SelectStmt') {
      for (const item of stmt.fromClause ?? []) this.from(item, level)
      this.conditions(stmt.whereClause, level)
    } else if (kind === 'UpdateStmt' || kind === 'DeleteStmt') {
      this.range(stmt.relation, level)
      for (const item of stmt.fromClause ?? stmt.usingClause ?? []) this.from(item, level)
      this.conditions(stmt.whereClause, level)
    } else {
      const range = this.range(stmt.relation, level)
      const columns = (stmt.cols ?? []).map((c: Node) => c.ResTarget?.name)
      // Citus routes an inserted row by its tenant_id; the tables an insert … select reads are checked as a select
      if (range && columns.includes('tenant_id')) this.union(`${range.alias}.tenant_id`, CONST)
    }
    // Citus (seen on 13.2): a correlated subquery in the select list pinned only through the outer
    // row (`du.tenant_id = u.tenant_id`) makes the whole statement a query to every shard, and fails
    // ("correlated subqueries are not supported when the FROM clause contains a set returning function")
    // next to an `unnest` sublink; a correlated `exists` in WHERE is routed
    for (const [key, value] of Object.entries(stmt))
      if (key !== 'relation') this.walk(value, kind === 'SelectStmt' && key === 'targetList')
  }

  private range(rangeVar: Node, level: Level): Range | undefined {
    if (!rangeVar || (rangeVar.schemaname && rangeVar.schemaname !== 'public')) return undefined
    const range = { table: rangeVar.relname, alias: rangeVar.alias?.aliasname ?? rangeVar.relname }
    level.ranges.push(range)
    this.ranges.push(range)
    return range
  }

  private from(item: Node, level: Level) {
    if (item.RangeVar) this.range(item.RangeVar, level)
    else if (item.JoinExpr) {
      this.from(item.JoinExpr.larg, level)
      this.from(item.JoinExpr.rarg, level)
      this.conditions(item.JoinExpr.quals, level)
    }
  }

  /** Only conjuncts count: an equality under OR or NOT pins nothing. */
  private conditions(expr: Node, level: Level) {
    if (!expr) return
    if (expr.BoolExpr?.boolop === 'AND_EXPR')
      return expr.BoolExpr.args.forEach((arg: Node) => this.conditions(arg, level))
    const op = expr.A_Expr
    if (!op || op.kind !== 'AEXPR_OP' || op.name?.[0]?.String?.sval !== '=') return
    const left = this.side(op.lexpr, level)
    const right = this.side(op.rexpr, level)
    for (const l of left) for (const r of right) this.union(l, r)
  }

  /** The union-find keys an operand stands for: `alias.tenant_id`, the constant, or nothing. */
  private side(node: Node, level: Level): string[] {
    if (node?.TypeCast) return this.side(node.TypeCast.arg, level)
    if (node?.ParamRef || node?.A_Const) return [CONST]
    const fields = node?.ColumnRef?.fields?.map((f: Node) => f.String?.sval)
    if (!fields || fields[fields.length - 1] !== 'tenant_id') return []
    if (fields.length >= 2) {
      const alias = fields[fields.length - 2]
      // in a select-list subquery only its own tables (or a constant) pin a tenant table
      if (level.isolated && !level.ranges.some((r) => r.alias === alias)) return []
      return [`${alias}.tenant_id`]
    }
    return level.ranges.filter((r) => this.tenant.has(r.table)).map((r) => `${r.alias}.tenant_id`)
  }

  /** Tenant tables of the statement not pinned to one tenant. */
  unpinned(): string[] {
    const target = this.find(CONST)
    return [
      ...new Set(
        this.ranges
          .filter((r) => this.tenant.has(r.table) && this.find(`${r.alias}.tenant_id`) !== target)
          .map((r) => r.table),
      ),
    ]
  }
}

export interface Offender {
  sql: string
  tables: string[]
}

/** The statements that touch a tenant table without a single-tenant filter and are not allowed by name. */
export async function unroutableStatements(statements: Iterable<string>): Promise<Offender[]> {
  await loadModule()
  const tenant = new Set(tenantTables())
  const offenders: Offender[] = []
  for (const sql of statements) {
    const collapsed = sql.replace(/\s+/g, ' ').trim()
    if (ALLOWED_CROSS_TENANT.some((a) => a.sql.test(collapsed))) continue
    const analysis = new Analysis(tenant)
    analysis.walk(parseSync(sql).stmts)
    const tables = analysis.unpinned()
    if (tables.length > 0) offenders.push({ sql: collapsed, tables })
  }
  return offenders
}
