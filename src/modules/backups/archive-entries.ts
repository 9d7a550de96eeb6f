import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import readline from 'node:readline'
import type { Readable } from 'node:stream'
import type pg from 'pg'
import { SettlingCursor } from '../../platform/db/database.js'

const BATCH = 1000
/**
 * A batch also stops at about this many bytes of JSON: some rows are megabytes (a sync client view holds
 * the ids of everything its user sees, 300,000 in the bench), and 1,000 of them would not be flat memory.
 */
const BATCH_BYTES = 8 * 1024 * 1024
const FIRST_BATCH = 8

/** A table or column name quoted for SQL text (names come from the catalog, never from a request). */
export const ident = (name: string) => `"${name.replaceAll('"', '""')}"`

/** What the manifest records of an archived table or file: its size and the SHA-256 of its bytes. */
export interface EntrySummary {
  count: number
  sha256: string
}

/**
 * The rows of one query (`select to_jsonb(t)::text as row …`) as JSON lines, read through a cursor in
 * batches, so a table of millions of rows streams in flat memory; `done` gets their count and checksum.
 */
export async function* jsonLines(
  client: pg.PoolClient | pg.Client,
  text: string,
  values: unknown[],
  done: (summary: EntrySummary) => void,
): AsyncGenerator<string> {
  const hash = createHash('sha256')
  const cursor = client.query(new SettlingCursor(text, values))
  let count = 0
  // the first read is small: a table of megabyte rows must not arrive 1,000 rows at once
  let size = FIRST_BATCH
  try {
    for (;;) {
      const batch: { row: string }[] = await cursor.read(size)
      if (batch.length === 0) break
      const lines = batch.map((r) => `${r.row}\n`).join('')
      hash.update(lines)
      count += batch.length
      // the next read takes as many rows as fit the byte budget at this batch's row size
      size = Math.max(1, Math.min(BATCH, Math.floor((batch.length * BATCH_BYTES) / Math.max(1, lines.length))))
      yield lines
    }
  } finally {
    await cursor.close()
  }
  done({ count, sha256: hash.digest('hex') })
}

/** A file's bytes; `done` gets their number and checksum once the file has been read. */
export async function* fileBytes(file: string, done: (summary: EntrySummary) => void): AsyncGenerator<Buffer> {
  const hash = createHash('sha256')
  let count = 0
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    hash.update(chunk)
    count += chunk.length
    yield chunk
  }
  done({ count, sha256: hash.digest('hex') })
}

/**
 * Inserts a table's JSON lines (an archive entry) in batches, the columns the archive has (a column a
 * later migration added takes its default), ids as they were (identity columns included); throws when
 * the rows or their checksum are not the manifest's. Answers the number of rows.
 */
export async function insertJsonLines(
  client: pg.PoolClient | pg.Client,
  table: string,
  input: Readable,
  expected: { rows: number; sha256: string },
  source: string,
): Promise<number> {
  const identity = await client.query(
    `select 1 from pg_attribute where attrelid = $1::regclass and attidentity = 'a'`,
    [`public.${table}`],
  )
  const overriding = identity.rows.length > 0 ? 'overriding system value' : ''
  const hash = createHash('sha256')
  let batch: string[] = []
  let batchBytes = 0
  let rows = 0
  const flush = async () => {
    if (batch.length === 0) return
    const first: unknown = JSON.parse(batch[0]!)
    const columns = Object.keys(first !== null && typeof first === 'object' ? first : {})
      .map(ident)
      .join(', ')
    await client.query(
      `insert into ${ident(table)} (${columns}) ${overriding}
       select ${columns} from jsonb_populate_recordset(null::${ident(table)}, $1::jsonb)`,
      [`[${batch.join(',')}]`],
    )
    rows += batch.length
    batch = []
    batchBytes = 0
  }
  for await (const line of readline.createInterface({ input, crlfDelay: Infinity })) {
    if (line === '') continue
    hash.update(`${line}\n`)
    batch.push(line)
    batchBytes += line.length
    if (batch.length >= BATCH || batchBytes >= BATCH_BYTES) await flush()
  }
  await flush()
  if (rows !== expected.rows || hash.digest('hex') !== expected.sha256)
    throw new Error(`table ${table}: the ${source}'s rows do not match its manifest (damaged ${source})`)
  return rows
}
