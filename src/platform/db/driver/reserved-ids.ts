import { sql } from 'kysely'
import type { Db } from '../schema.js'

/** How many ids one refill takes from `global_id_seq`: one round trip per this many reserved ids. */
const BLOCK_SIZE = 64

interface Reservation {
  ids: number[]
  refilling?: Promise<void>
}
// per database handle: ids of one database's sequence are never used in another
const reservations = new WeakMap<Db, Reservation>()

async function refill(db: Db, reservation: Reservation): Promise<void> {
  const { rows } = await sql<{
    id: number
  }>`select nextval('global_id_seq') as id from generate_series(1, ${BLOCK_SIZE}::int)`.execute(db)
  reservation.ids.push(...rows.map((row) => Number(row.id)))
}

/**
 * `count` ids of `global_id_seq` for rows this process is about to insert, known before the insert
 * (e.g. for the events written in the same statement). Taken from a block the process reserved
 * (hi/lo): unique on every node, increasing within one process but not across processes, and the
 * unused rest of a block is a gap when the process stops (decision 0005, "Sixth pass").
 */
export async function reserveIds(db: Db, count: number): Promise<number[]> {
  let reservation = reservations.get(db)
  if (!reservation) reservations.set(db, (reservation = { ids: [] }))
  while (reservation.ids.length < count) {
    // one refill at a time: concurrent callers wait for it instead of each taking a block
    reservation.refilling ??= refill(db, reservation).finally(() => {
      reservation.refilling = undefined
    })
    await reservation.refilling
  }
  return reservation.ids.splice(0, count)
}
