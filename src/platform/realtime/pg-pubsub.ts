import { type RawBuilder, sql } from 'kysely'
import pg from 'pg'
import { outsideConnectionScopes } from '../db/connection-gate.js'
import type { Db } from '../db/schema.js'

/**
 * Cross-process publish/subscribe. The PostgreSQL implementation below uses LISTEN/NOTIFY so that
 * several API processes see the same events without another server; swap it behind this interface
 * (e.g. Redis) when the NOTIFY rate outgrows one database.
 */
export interface PubSub {
  /** Subscribes to a channel; resolves once listening. Returns the unsubscribe function. */
  subscribe(channel: string, handler: (payload: unknown) => void): Promise<() => Promise<void>>
  close(): Promise<void>
}

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/
/** PostgreSQL drops NOTIFY payloads of 8000 bytes or more; stay well below. */
export const MAX_NOTIFY_PAYLOAD_BYTES = 7900

function checkChannel(channel: string): void {
  if (!CHANNEL.test(channel)) throw new Error(`invalid channel name "${channel}"`)
}

/**
 * Publishes through `db`. In a transaction, PostgreSQL delivers the message only when that transaction
 * commits, so subscribers never see a change that rolled back. Outside one (every statement before it
 * has committed), the message joins the process's next batch (`noticeQueue`): resolves once sent.
 */
export async function publish(db: Db, channel: string, payload: unknown): Promise<void> {
  if (db.isTransaction) await sql`select ${publishSql(channel, payload)}`.execute(db)
  else await noticeQueue(db).send(channel, noticeText(channel, payload))
}

/** `publish` as an SQL call, for a statement that makes it together with other calls (e.g. `enqueueSql`). */
export function publishSql(channel: string, payload: unknown): RawBuilder<unknown> {
  return sql`pg_notify(${channel}, ${noticeText(channel, payload)})`
}

function noticeText(channel: string, payload: unknown): string {
  checkChannel(channel)
  const text = JSON.stringify(payload)
  if (Buffer.byteLength(text) > MAX_NOTIFY_PAYLOAD_BYTES)
    throw new Error(`notify payload on "${channel}" exceeds ${MAX_NOTIFY_PAYLOAD_BYTES} bytes`)
  return text
}

interface NoticeBatch {
  channels: string[]
  texts: string[]
  sent: Promise<void>
}

const queues = new WeakMap<Db, ReturnType<typeof createNoticeQueue>>()
const noticeQueue = (db: Db) => {
  let queue = queues.get(db)
  if (!queue) queues.set(db, (queue = createNoticeQueue(db)))
  return queue
}

/**
 * Messages published outside a transaction, sent several in one statement. A transaction that NOTIFYs
 * takes a lock of the whole database at its commit and holds it through the commit's WAL flush, so such
 * commits run one at a time, every tenant's (pgbench, 20 clients updating rows of their own: 16,600
 * commits/s, 4,200 with a NOTIFY in each; docs/decisions/0029-notices-after-commit.md). One statement per batch: a
 * message waits for the batch in flight, then goes with every message queued meanwhile (like a group
 * commit), and no write of the API holds that lock for its own commit.
 */
function createNoticeQueue(db: Db) {
  let queued: NoticeBatch | undefined
  let previous: Promise<unknown> = Promise.resolve()
  return {
    /** Resolves once the message is sent (rejects with its batch's error). */
    send(channel: string, text: string): Promise<void> {
      if (!queued) {
        const batch: NoticeBatch = { channels: [], texts: [], sent: Promise.resolve() }
        batch.sent = previous.then(() =>
          // the batch is every sender's: not gated by the permits of the request that opened it
          outsideConnectionScopes(async () => {
            // from here on, messages join the next batch
            if (queued === batch) queued = undefined
            await sql`select pg_notify(n.channel, n.text)
              from unnest(${batch.channels}::text[], ${batch.texts}::text[]) as n(channel, text)`.execute(db)
          }),
        )
        previous = batch.sent.catch(() => undefined)
        queued = batch
      }
      queued.channels.push(channel)
      queued.texts.push(text)
      return queued.sent
    },
  }
}

export interface PgPubSubOptions {
  /** Resolved lazily: the listener connects on the first subscription only. */
  connectionString: () => Promise<string>
  onError?: (error: unknown) => void
  /** Whether the listening connection alone keeps the process alive (default true). */
  keepProcessAlive?: boolean
  /** Called with true once every channel is LISTENed to, with false when that connection is lost. */
  onListening?: (listening: boolean) => void
  reconnectDelayMs?: number
}

/** LISTEN on one dedicated connection per process (not a pooled one: LISTEN is session state). */
export function createPgPubSub(options: PgPubSubOptions): PubSub {
  const handlers = new Map<string, Set<(payload: unknown) => void>>()
  const reconnectDelay = options.reconnectDelayMs ?? 1000
  let client: pg.Client | undefined
  let connecting: Promise<pg.Client> | undefined
  let closed = false
  let reconnectTimer: NodeJS.Timeout | undefined

  const report = (error: unknown) => options.onError?.(error)
  const lost = (lostClient: pg.Client) => {
    if (client !== lostClient) return false
    client = undefined
    options.onListening?.(false)
    return true
  }

  function dispatch(message: pg.Notification): void {
    const set = handlers.get(message.channel)
    if (!set || message.payload === undefined) return
    let payload: unknown
    try {
      payload = JSON.parse(message.payload)
    } catch (error) {
      report(error)
      return
    }
    for (const handler of set) {
      try {
        handler(payload)
      } catch (error) {
        report(error)
      }
    }
  }

  function scheduleReconnect(): void {
    if (closed || reconnectTimer || handlers.size === 0) return
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined
      connect().catch((error) => {
        report(error)
        scheduleReconnect()
      })
    }, reconnectDelay)
    reconnectTimer.unref()
  }

  async function connect(): Promise<pg.Client> {
    if (client) return client
    connecting ??= (async () => {
      const next = new pg.Client({ connectionString: await options.connectionString(), keepAlive: true })
      next.on('notification', dispatch)
      next.on('error', (error) => {
        report(error)
        lost(next)
        next.end().catch(() => undefined)
        scheduleReconnect()
      })
      next.on('end', () => {
        if (lost(next)) scheduleReconnect()
      })
      await next.connect()
      for (const channel of handlers.keys()) await next.query(`listen ${channel}`)
      if (closed) {
        await next.end()
        throw new Error('pubsub closed')
      }
      client = next
      if (options.keepProcessAlive === false)
        // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- pg.Client's socket, not in its typings
        (next as unknown as { connection?: { stream?: { unref?: () => void } } }).connection?.stream?.unref?.()
      options.onListening?.(true)
      return next
    })().finally(() => {
      connecting = undefined
    })
    return connecting
  }

  return {
    async subscribe(channel, handler) {
      checkChannel(channel)
      if (closed) throw new Error('pubsub closed')
      let set = handlers.get(channel)
      const isNewChannel = !set
      if (!set) handlers.set(channel, (set = new Set()))
      set.add(handler)
      const connected = client
      if (!connected)
        await connect() // LISTENs every known channel
      else if (isNewChannel) await connected.query(`listen ${channel}`) // name checked against CHANNEL above
      return async () => {
        const current = handlers.get(channel)
        current?.delete(handler)
        if (current && current.size === 0) {
          handlers.delete(channel)
          await client?.query(`unlisten ${channel}`).catch(report)
        }
      }
    },
    async close() {
      closed = true
      if (reconnectTimer) clearTimeout(reconnectTimer)
      handlers.clear()
      const current = client ?? (await connecting?.catch(() => undefined))
      if (current) lost(current)
      client = undefined
      // an unref'd socket (keepProcessAlive: false) would let the process exit before the goodbye is sent
      // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- pg.Client's socket, not in its typings
      const connection = (current as unknown as { connection?: { stream?: { ref?: () => void } } } | undefined)
        ?.connection
      connection?.stream?.ref?.()
      await current?.end().catch(() => undefined)
    },
  }
}
