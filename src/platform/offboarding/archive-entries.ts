import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import type pg from 'pg'
import { SettlingCursor } from '../db/database.js'

const BATCH = 1000

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
  try {
    for (;;) {
      const batch: { row: string }[] = await cursor.read(BATCH)
      if (batch.length === 0) break
      const lines = batch.map((r) => `${r.row}\n`).join('')
      hash.update(lines)
      count += batch.length
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
