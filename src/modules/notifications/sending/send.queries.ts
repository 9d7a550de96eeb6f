import { sql } from 'kysely'
import { withClause } from '../../../platform/db/database.js'
import type { Db } from '../../../platform/db/schema.js'
import { eventWritesSql, type EventWrites } from '../../../platform/events/domain-events.js'
import { genericNotificationInsert, type GenericNotificationValues } from '../notifications.queries.js'
import type { listedRecordsWrite } from './fan-out.js'

/**
 * Writes a send (its `id` reserved), its records, their change records and delivery job and its events'
 * writes as one statement (decision 0005, sixth pass), only if every listed user is a recipient and no
 * event subscriber has work; whether it wrote them (the caller then announces them: `records.announce`).
 */
export async function insertSendInOneStatement(
  db: Db,
  tenantId: number,
  send: GenericNotificationValues & { id: number },
  records: ReturnType<typeof listedRecordsWrite>,
  events: EventWrites,
): Promise<boolean> {
  const written = sql<boolean>`exists (select from sent)`
  const eventWrites = eventWritesSql(tenantId, events, written)
  const sent = sql`${genericNotificationInsert(tenantId, send, sql`${records.allRecipients} and ${eventWrites.unheeded}`)} returning id`
  const { rows } =
    await sql`${withClause([['sent', sent], ['records', records.insert(written)], ...records.feed, ...eventWrites.ctes])}
      select ${records.job} from sent`.execute(db)
  return rows.length > 0
}
