import { sql } from 'kysely'
import type { Db } from '../../../platform/db/schema.js'
import { selectOwnNotifications } from '../notifications.queries.js'

/** The records of one source key for these users (a list's base query, alias `n`). */
export const selectSourceNotifications = (db: Db, tenantId: number, userIds: number[], sourceKey: string) =>
  db
    .selectFrom('notifications as n')
    .where('n.tenant_id', '=', tenantId)
    .where('n.notifiable_id', 'in', userIds)
    .where('n.source_key', '=', sourceKey)

/** The user's own records created at or after the second `watermark` (a list's base query, alias `n`). */
export const selectOwnNotificationsFrom = (db: Db, tenantId: number, userId: number, watermark: number) =>
  selectOwnNotifications(db, tenantId, userId).where(
    'n.created_at',
    '>=',
    sql<string>`to_timestamp(${watermark}::bigint)`,
  )

/** The database's now less the settle window (seconds), and the user's records created within the window. */
export async function findStreamStart(db: Db, tenantId: number, userId: number, settleSeconds: number) {
  const {
    rows: [row],
  } = await sql<{ now: number; recent: Array<{ id: string; created: number }> }>`
      select floor(extract(epoch from now()))::bigint - ${settleSeconds}::int as now,
             coalesce((select json_agg(json_build_object('id', n.id, 'created', floor(extract(epoch from n.created_at))::bigint))
                from notifications n
               where n.tenant_id = ${tenantId} and n.notifiable_id = ${userId}
                 and n.created_at >= now() - make_interval(secs => ${settleSeconds}::int)), '[]') as recent`.execute(db)
  return row!
}

/** The creation second of each of the user's records among `ids`. */
export function selectCreatedSeconds(db: Db, tenantId: number, userId: number, ids: string[]) {
  return db
    .selectFrom('notifications')
    .select(['id', sql<number>`floor(extract(epoch from created_at))::bigint`.as('created')])
    .where('tenant_id', '=', tenantId)
    .where('notifiable_id', '=', userId)
    .where('id', 'in', ids)
    .execute()
}
