import { type CompiledQuery, Kysely, PostgresDialect } from 'kysely'
import { createHash } from 'node:crypto'
import pg from 'pg'
import type { Database, Db } from './schema.js'
import { observePool } from '../metrics/index.js'
import { startEmbeddedPostgres } from './embedded-postgres.js'
import { changeNotices, isNoticedWrite, touchesSync, writeTenant } from './change-notices.js'
import { SettlingCursor } from './cursor.js'
import { thrownFields } from '../thrown.js'
import { assumeCitus, detectCitus } from './citus.js'

const TIMESTAMPTZ = 1184
const TIMESTAMP = 1114
const DATE = 1082
const INT8 = 20
const INT8_ARRAY = 1016

/**
 * Timestamps are serialized in ONE place: the connection runs in UTC, and the driver hands
 * `YYYY-MM-DD HH:MM:SS` strings to the code (contract 00 §7). Dates read as `YYYY-MM-DD 00:00:00`.
 */
const timestamp = (value: string) => value.slice(0, 19)
/** A time of this process as the driver hands timestamps to the code (UTC, to the second), e.g. for a value set before its insert. */
export const timestampText = (time: Date) => time.toISOString().slice(0, 19).replace('T', ' ')
const date = (value: string) => `${value} 00:00:00`
const int8 = (value: string) => Number(value)
/** int4[] (no member of pg's TypeId enum): node-postgres's own array parser */
const INT4_ARRAY_OID: number = 1007
const int8Array = (value: string): unknown => pg.types.getTypeParser(INT4_ARRAY_OID, 'text')(value)
// node-postgres asks for a parser per column of every result: answered from a map, not rebuilt
const parsers = new Map<number, unknown>()
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    const key = format === 'binary' ? -1 - oid : oid
    let parser = parsers.get(key)
    if (parser === undefined) {
      parser =
        oid === TIMESTAMPTZ || oid === TIMESTAMP
          ? timestamp
          : oid === DATE
            ? date
            : oid === INT8
              ? int8
              : oid === INT8_ARRAY
                ? int8Array
                : format === 'binary'
                  ? pg.types.getTypeParser(oid, 'binary')
                  : pg.types.getTypeParser(oid, 'text')
      parsers.set(key, parser)
    }
    return parser
  },
}

/**
 * `session`: every pooled connection is a server session of its own (direct, or a session-mode pooler).
 * `transaction`: `url` is a transaction-mode pooler (PgBouncer): consecutive statements outside a
 * transaction may run on different server connections, so nothing may rely on session state.
 */
export type PoolMode = 'session' | 'transaction'

export interface DatabaseHandle {
  db: Db
  pool: pg.Pool
  /** What the pool connects to (a pooler in `transaction` mode). */
  url: string
  /** A URL with real sessions, for LISTEN, migrations and session advisory locks. */
  directUrl: string
  poolMode: PoolMode
  close(): Promise<void>
}

export interface DatabaseOptions {
  url?: string
  /** Defaults to `url`. */
  directUrl?: string
  poolMode?: PoolMode
  dataDir: string
  poolSize?: number
  log?: (message: string) => void
  /** Settings of the pool's connections on a Citus coordinator only (`citus.multi_task_query_log_level`). */
  citusSettings?: Readonly<Record<string, string>>
}

/** Resolves the connection URLs: the given ones, or a private embedded server in `$DATA_DIR/postgres`. */
export async function resolveDatabaseUrl(
  options: DatabaseOptions,
): Promise<{ url: string; directUrl: string; stop: () => Promise<void> }> {
  if (options.url) return { url: options.url, directUrl: options.directUrl ?? options.url, stop: async () => {} }
  const server = await startEmbeddedPostgres(options.dataDir, 'workplace', options.log)
  return { url: server.url, directUrl: server.url, stop: () => server.stop() }
}

export interface PoolOptions {
  max?: number
  allowExitOnIdle?: boolean
  /** Commit without waiting for the WAL flush (the job worker's connections, see runtime.ts); session mode only. */
  asynchronousCommit?: boolean
  poolMode?: PoolMode
  /** The `pool` label of its metrics. */
  name?: string
  /**
   * Plan each named statement once per connection, without its parameters' values (session mode only:
   * a transaction-mode pooler gets no startup options and no named statements). Left to itself,
   * PostgreSQL replans a statement on every execution whenever the plan for its values looks cheaper
   * than the generic one, which is always the case for `limit $n`, `= any($array)` and `unnest($array)`:
   * it estimates 10 % of the rows or 10 elements for an unknown value. The request paths are by-key
   * lookups and ordered index scans, where the generic plan is the same plan; replanning cost up to
   * 0.4 ms a statement (decision 0005, third pass).
   */
  genericPlans?: boolean
  /** More settings of each connection (session mode only), e.g. `citus.multi_task_query_log_level`. */
  settings?: Readonly<Record<string, string>>
}

/**
 * The settings every statement of the app relies on. In session mode they are sent as startup options;
 * a transaction-mode pooler refuses or mixes up startup options, so there they must be the database's
 * own defaults (`applyDatabaseDefaults`, run by `migrate`) and are verified at start (`verifySessionSettings`).
 * JIT off: it pays off for long analytic queries, not for an API's; PostgreSQL compiles any plan whose
 * estimate passes jit_above_cost (access-rule lists do), adding 200-300 ms to a 9 ms query.
 */
const REQUIRED_SETTINGS = { TimeZone: 'UTC', jit: 'off' } as const

export function createPool(
  url: string,
  {
    max = 20,
    allowExitOnIdle = false,
    asynchronousCommit = false,
    poolMode = 'session',
    name = 'api',
    genericPlans = false,
    settings = {},
  }: PoolOptions = {},
): pg.Pool {
  const startupOptions = Object.entries(REQUIRED_SETTINGS).map(([setting, value]) => `-c ${setting}=${value}`)
  if (asynchronousCommit) startupOptions.push('-c synchronous_commit=off')
  if (genericPlans) startupOptions.push('-c plan_cache_mode=force_generic_plan')
  for (const [setting, value] of Object.entries(settings)) startupOptions.push(`-c ${setting}=${value}`)
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types,
    ...(poolMode === 'session' ? { options: startupOptions.join(' ') } : {}),
    connectionTimeoutMillis: 5_000,
    allowExitOnIdle,
  } as pg.PoolConfig)
  // An idle client losing its connection (database restart) must not crash the process.
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  observePool(pool, name)
  return pool
}

const MAX_NAMED_STATEMENTS = 2000

type CommitListener = (tables: ReadonlySet<string>) => void
const commitListeners = new Set<CommitListener>()

/**
 * Calls `listener` with the tables a statement of this process wrote, once that write is committed
 * (after `commit`, or right away outside a transaction). In-process caches use it to invalidate
 * synchronously: the client that made the change sees it on its very next request. Changes made by
 * other processes reach them through NOTIFY instead.
 */
export function onCommittedWrites(listener: CommitListener): () => void {
  commitListeners.add(listener)
  return () => commitListeners.delete(listener)
}

/**
 * Makes the required settings the database's defaults for the app's role, so that every server
 * connection a pooler opens has them. Idempotent; needs ownership of the database or of the role
 * (else a warning: the operator sets them, `verifySessionSettings` tells).
 */
export async function applyDatabaseDefaults(pool: pg.Pool, warn: (message: string) => void = () => {}): Promise<void> {
  const settings = Object.entries(REQUIRED_SETTINGS)
  const { rows } = await pool.query<{ name: string; value: string | null }>(
    `select s.name, (select split_part(c, '=', 2) from pg_db_role_setting d, unnest(d.setconfig) c
                      where d.setdatabase = (select oid from pg_database where datname = current_database())
                        and d.setrole in (0, (select oid from pg_roles where rolname = current_user))
                        and lower(split_part(c, '=', 1)) = lower(s.name) order by d.setrole desc limit 1) as value
       from unnest($1::text[]) s(name)`,
    [settings.map(([name]) => name)],
  )
  const missing = settings.filter(
    ([name, value]) => rows.find((r) => r.name === name)?.value?.toLowerCase() !== value.toLowerCase(),
  )
  if (missing.length === 0) return
  try {
    const {
      rows: [who],
    } = await pool.query<{ role: string; database: string }>(
      'select current_user as role, current_database() as database',
    )
    const client = pg.Client.prototype
    for (const [name, value] of missing) {
      await pool.query(
        `alter role ${client.escapeIdentifier(who.role)} in database ${client.escapeIdentifier(who.database)} set ${name} to ${client.escapeLiteral(value)}`,
      )
    }
  } catch (error) {
    warn(
      `cannot make ${missing.map(([n, v]) => `${n}=${v}`).join(', ')} the defaults of this role in this database (${thrownFields(error).message}); set them yourself for transaction-mode pooling`,
    )
  }
}

/** In transaction mode: fails clearly when a server connection the pooler hands out lacks a required setting. */
export async function verifySessionSettings(pool: pg.Pool): Promise<void> {
  const names = Object.keys(REQUIRED_SETTINGS)
  const { rows } = await pool.query<{ name: string; setting: string }>(
    'select name, setting from pg_settings where name = any($1::text[])',
    [names],
  )
  const wrong = Object.entries(REQUIRED_SETTINGS).filter(
    ([name, value]) =>
      rows.find((r) => r.name.toLowerCase() === name.toLowerCase())?.setting.toLowerCase() !== value.toLowerCase(),
  )
  if (wrong.length > 0) {
    throw new Error(
      `DATABASE_POOL_MODE=transaction: the pooled connections lack ${wrong.map(([n, v]) => `${n}=${v}`).join(', ')}. ` +
        "Run `workplace migrate` on DATABASE_DIRECT_URL (it makes them the role's defaults in this database) or set them with ALTER ROLE … IN DATABASE … SET; " +
        'server connections the pooler opened before keep their old settings until it reconnects them (PgBouncer: RECONNECT).',
    )
  }
}

function notifyCommitted(tables: ReadonlySet<string>): void {
  if (tables.size > 0) for (const listener of commitListeners) listener(tables)
}

const WRITE =
  /\b(insert\s+into|update|delete\s+from|merge\s+into|truncate(?:\s+table)?)\s+(?:only\s+)?"?([a-z_][a-z0-9_]*)"?/gi

/** What the driver knows of one distinct SQL text (one Map lookup per query: hashing a long text is not free). */
interface StatementInfo {
  name?: string
  transaction?: 'begin' | 'commit' | 'rollback'
  writes: ReadonlySet<string>
  /** The written tables whose change other processes must hear of (db/change-notices.ts). */
  noticed: ReadonlySet<string>
}
const statements = new Map<string, StatementInfo>()

/**
 * Kysely sends every query unnamed, so PostgreSQL plans it anew each time; for the joins of the hot
 * paths (token → actor, access rules) planning costs several times the execution (measured 1.2 ms vs
 * 0.17 ms for the auth lookup). Naming each distinct SQL text makes node-postgres prepare it once per
 * connection and reuse it. Distinct texts are bounded: past the cap, new texts run unnamed.
 * Also noted: what the text does to transactions, and which tables it writes (`onCommittedWrites`).
 */
function statementInfo(text: string): StatementInfo {
  const known = statements.get(text)
  if (known) return known
  const head = text.trimStart().slice(0, 20).toLowerCase()
  const transaction = /^(begin|start transaction)\b/.test(head)
    ? 'begin'
    : /^(commit|end)\b/.test(head)
      ? 'commit'
      : /^rollback\b(?!\s+to)/.test(head)
        ? 'rollback'
        : undefined
  const matches = Array.from(
    text.matchAll(WRITE),
    (m) => [m[1].split(/\s/)[0].toLowerCase(), m[2].toLowerCase()] as const,
  )
  const writes = new Set(matches.map(([, table]) => table))
  const noticed = new Set(
    matches.filter(([verb, table]) => isNoticedWrite(verb, table, text)).map(([, table]) => table),
  )
  if (statements.size >= MAX_NAMED_STATEMENTS) return { transaction, writes, noticed }
  const info: StatementInfo = {
    name: `k${createHash('sha1').update(text).digest('base64url')}`,
    transaction,
    writes,
    noticed,
  }
  statements.set(text, info)
  return info
}

/**
 * The pool as Kysely sees it: each checked-out client is wrapped so that Kysely's parameterized
 * queries `query(text, values)` go out as named (prepared) statements, and committed writes are
 * reported to `onCommittedWrites` listeners. Transaction state is tracked per checkout (a Kysely
 * transaction is one checkout); graphile-worker and `pool.query` use the same clients unwrapped.
 */
export function preparingPool(pool: pg.Pool, namedStatements = true): pg.Pool {
  // one wrapper per physical client, reused by every checkout: Kysely keys its connection objects
  // by the client it gets, so a fresh wrapper per checkout would rebuild them on every query
  const wrappers = new WeakMap<pg.PoolClient, { client: pg.PoolClient; checkedOut: () => void }>()
  const connect = async () => {
    const client = await pool.connect()
    let wrapper = wrappers.get(client)
    if (!wrapper) wrappers.set(client, (wrapper = wrapClient(client, namedStatements)))
    wrapper.checkedOut()
    return wrapper.client
  }
  return new Proxy(pool, {
    get: (target, property, receiver) => (property === 'connect' ? connect : Reflect.get(target, property, receiver)),
  })
}

const BUMP_TENANT_CLOCK = 'update sync_clocks set seq = seq + 1 where tenant_id = $1'
const BUMP_EVERY_CLOCK = `do $$ begin
  if to_regclass('sync_clocks') is not null then update sync_clocks set seq = seq + 1; end if;
end $$`

/** The client with `query(text, values)` prepared and committed writes reported (state kept per checkout). */
function wrapClient(client: pg.PoolClient, namedStatements: boolean) {
  const submit = client.query.bind(client) as (...args: unknown[]) => unknown
  // pg's callback form, not its promise form: with the promise form every result's rows outlived two
  // young-generation collections and were promoted (about 25 KB per 50-row page, even one request at
  // a time), and the API spent three to five times the baseline's time in scavenges (decision 0005)
  const query = (...args: unknown[]) =>
    new Promise((resolve, reject) => {
      submit(...args, (error: Error | null, result: unknown) => (error ? reject(error) : resolve(result)))
    })
  let inTransaction = false
  let uncommitted = new Set<string>()
  let unnoticed = new Set<string>()
  const afterStatement = (kind: StatementInfo) => {
    if (kind.transaction === 'begin') inTransaction = true
    else if (kind.transaction) {
      const written = uncommitted
      inTransaction = false
      uncommitted = new Set()
      unnoticed = new Set()
      // a failed commit committed nothing: reporting it anyway only costs a cache refill
      if (kind.transaction === 'commit') notifyCommitted(written)
    } else if (inTransaction) {
      for (const table of kind.writes) uncommitted.add(table)
      for (const table of kind.noticed) unnoticed.add(table)
    } else notifyCommitted(kind.writes)
  }
  const sendNotices = async (tables: ReadonlySet<string>) => {
    if (touchesSync(tables)) await bumpSyncClock()
    const notices = changeNotices(tables)
    if (notices.length === 0) return
    await query('select pg_notify(n.channel, n.payload) from unnest($1::text[], $2::text[]) as n(channel, payload)', [
      notices.map((n) => n.channel),
      notices.map((n) => n.payload),
    ])
  }
  // the change feed's clock (change-notices.ts), in the writing transaction: its tenant's row when the
  // write's tenant is known (a request, a job run for a tenant), else every tenant's (the CLI, a
  // migration: the table may not exist yet)
  const bumpSyncClock = async () => {
    const tenant = writeTenant()
    if (tenant !== undefined) await query(BUMP_TENANT_CLOCK, [tenant])
    else await query(BUMP_EVERY_CLOCK)
  }
  // a single write outside a transaction that must send a notice: made a transaction of its own, so
  // that the notice is delivered with the commit (a crash in between cannot lose it)
  const withNotice = async (run: () => Promise<unknown>, kind: StatementInfo) => {
    await query('begin')
    try {
      const result = await run()
      await sendNotices(kind.noticed)
      await query('commit')
      notifyCommitted(kind.writes)
      return result
    } catch (error) {
      await query('rollback').catch(() => undefined)
      throw error
    }
  }
  const preparedQuery = (...args: unknown[]) => {
    const [text, values] = args
    if (args.length === 2 && typeof text === 'string' && Array.isArray(values)) {
      const kind = statementInfo(text)
      const run = () => (kind.name && namedStatements ? query({ name: kind.name, text, values }) : query(text, values))
      if (!kind.transaction && kind.writes.size === 0) return run()
      if (kind.transaction === 'commit' && inTransaction && unnoticed.size > 0) {
        return sendNotices(unnoticed)
          .then(run)
          .finally(() => afterStatement(kind))
      }
      if (!kind.transaction && !inTransaction && kind.noticed.size > 0) return withNotice(run, kind)
      return run().finally(() => afterStatement(kind))
    }
    if (namedStatements && args[0] instanceof SettlingCursor) args[0].name = statementInfo(args[0].text).name
    return submit(...args)
  }
  return {
    client: new Proxy(client, { get: (c, p, r) => (p === 'query' ? preparedQuery : Reflect.get(c, p, r)) }),
    checkedOut() {
      inTransaction = false
      if (uncommitted.size > 0) uncommitted = new Set()
      if (unnoticed.size > 0) unnoticed = new Set()
    },
  }
}

/**
 * Kysely on a pool (committed-write reports, cursors for streaming; named prepared statements in
 * session mode only: a transaction-mode pooler may run the next execution on a server connection
 * that never saw the statement prepared).
 */
export function kyselyOn(pool: pg.Pool, poolMode: PoolMode = 'session'): Db {
  const preparing = preparingPool(pool, poolMode === 'session')
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparing, cursor: SettlingCursor }) })
  poolsOf.set(db, preparing)
  return db
}

/** The pool a Kysely of `kyselyOn` sends its statements through (named, committed writes reported). */
const poolsOf = new WeakMap<Db, pg.Pool>()

/**
 * Runs a statement compiled beforehand (`shapedStatement`) and returns its rows. On a Kysely of
 * `kyselyOn` it goes straight to a client of the same pool, as Kysely would send it, without Kysely's
 * executor (its connection provider, driver and connection layers cost seven promises and about
 * 5 µs a statement, a tenth of a single read's own Node time); in a transaction, or on any other
 * Kysely, through `executeQuery`.
 */
export async function executeCompiled<R>(db: Db, compiled: CompiledQuery<R>): Promise<R[]> {
  const pool = poolsOf.get(db)
  if (!pool) return (await db.executeQuery(compiled)).rows
  const client = await pool.connect()
  try {
    // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- pg's typings: its values array is only read; the rows are the compiled query's
    return (await client.query(compiled.sql, compiled.parameters as unknown[])).rows as R[]
  } finally {
    client.release()
  }
}

/**
 * Streams the rows of a compiled statement (maybe compiled beforehand: `shapedStatement`) through
 * Kysely's executor, in batches of at most `chunkSize` rows (one cursor read each): a select query
 * builder's `stream` without its one-row-at-a-time iteration, which cost a promise per row.
 */
export async function* streamCompiled<R>(db: Db, compiled: CompiledQuery<R>, chunkSize: number): AsyncGenerator<R[]> {
  // Kysely's plugins key their per-query state by this object (it does not export its own maker)
  for await (const result of db.getExecutor().stream(compiled, chunkSize, { queryId: 'streamCompiled' }))
    yield result.rows
}

/** Opens Kysely on the resolved PostgreSQL; `close` ends the pool and stops an embedded server we started. */
export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  const { url, directUrl, stop } = await resolveDatabaseUrl(options)
  const poolMode = options.url ? (options.poolMode ?? 'session') : 'session'
  // once, at start: on a Citus coordinator the pool plans each execution (Citus cannot make a
  // distributed plan of some generic ones: a parameter in a select-list subquery, docs/citus.md)
  const citus = options.url ? await detectCitus(url) : (assumeCitus(false), false)
  const settings = citus && options.citusSettings ? options.citusSettings : {}
  const pool = createPool(url, { max: options.poolSize, poolMode, genericPlans: !citus, settings })
  const db = kyselyOn(pool, poolMode)
  return {
    db,
    pool,
    url,
    directUrl,
    poolMode,
    async close() {
      await db.destroy()
      await stop()
    },
  }
}
