import { sql } from 'kysely'
import type { Db } from './schema.js'

/** How many ids one refill takes from `global_id_seq`: one round trip per this many reserved ids. */
const BLOCK_SIZE = 64

let reserved: number[] = []
let refilling: Promise<void> | undefined

async function refill(db: Db): Promise<void> {
  const { rows } = await sql<{ id: number }>`select nextval('global_id_seq') as id from generate_series(1, ${BLOCK_SIZE}::int)`.execute(db)
  reserved.push(...rows.map((row) => Number(row.id)))
}

/**
 * `count` ids of `global_id_seq` for rows this process is about to insert, known before the insert
 * (e.g. for the events written in the same statement). Taken from a block the process reserved
 * (hi/lo): unique on every node, increasing within one process but not across processes, and the
 * unused rest of a block is a gap when the process stops (decision 0005, "Sixth pass").
 */
export async function reserveIds(db: Db, count: number): Promise<number[]> {
  while (reserved.length < count) {
    // one refill at a time: concurrent callers wait for it instead of each taking a block
    refilling ??= refill(db).finally(() => { refilling = undefined })
    await refilling
  }
  return reserved.splice(0, count)
}
