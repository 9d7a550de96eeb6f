import type pg from 'pg'
import { changeNotices } from '../change-notices.js'
import { currentConnectionScope, type ConnectionScope } from '../connection-gate.js'
import { notifyCommitted } from './committed-writes.js'
import { SettlingCursor } from './cursor.js'
import { statementInfo, type StatementInfo } from './statement-text.js'

/**
 * The pool as Kysely sees it: each checked-out client is wrapped so that Kysely's parameterized
 * queries `query(text, values)` go out as named (prepared) statements, and committed writes are
 * reported to `onCommittedWrites` listeners. Transaction state is tracked per checkout (a Kysely
 * transaction is one checkout); graphile-worker and `pool.query` use the same clients unwrapped.
 */
export function preparingPool(pool: pg.Pool, namedStatements = true): pg.Pool {
  // one wrapper per physical client, reused by every checkout: Kysely keys its connection objects
  // by the client it gets, so a fresh wrapper per checkout would rebuild them on every query
  const wrappers = new WeakMap<pg.PoolClient, ReturnType<typeof wrapClient>>()
  const connect = async () => {
    // a request of a tenant that holds all its connection permits waits here (connection-gate.ts)
    const scope = currentConnectionScope()
    if (scope) await scope.checkout()
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (error) {
      scope?.checkin()
      throw error
    }
    let wrapper = wrappers.get(client)
    if (!wrapper) wrappers.set(client, (wrapper = wrapClient(client, namedStatements)))
    wrapper.checkedOut(scope)
    return wrapper.client
  }
  return new Proxy(pool, {
    get: (target, property, receiver) => (property === 'connect' ? connect : Reflect.get(target, property, receiver)),
  })
}

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
    const notices = changeNotices(tables)
    if (notices.length === 0) return
    await query('select pg_notify(n.channel, n.payload) from unnest($1::text[], $2::text[]) as n(channel, payload)', [
      notices.map((n) => n.channel),
      notices.map((n) => n.payload),
    ])
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
  // the checkout's request scope: its permit is given back with the connection
  let scope: ConnectionScope | undefined
  const release = (error?: Error | boolean) => {
    const returning = scope
    scope = undefined
    try {
      client.release(error)
    } finally {
      returning?.checkin()
    }
  }
  return {
    client: new Proxy(client, {
      get: (c, p, r) => (p === 'query' ? preparedQuery : p === 'release' ? release : Reflect.get(c, p, r)),
    }),
    checkedOut(by: ConnectionScope | undefined) {
      scope = by
      inTransaction = false
      if (uncommitted.size > 0) uncommitted = new Set()
      if (unnoticed.size > 0) unnoticed = new Set()
    },
  }
}
