import pg from 'pg'

/**
 * Runs `work` while holding a PostgreSQL session advisory lock named `name`, taken on a connection of
 * its own to `directUrl` (a real session: behind a transaction-mode pooler a pooled connection is not
 * one). Every process asking for the same name waits its turn; a process that dies releases the lock
 * with its session.
 */
export async function withSessionLock<T>(directUrl: string, name: string, work: () => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: directUrl })
  client.on('error', () => {})
  await client.connect()
  try {
    await client.query('select pg_advisory_lock(hashtextextended($1, 0))', [name])
    return await work()
  } finally {
    // closing the session releases the lock
    await client.end().catch(() => undefined)
  }
}
