import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import type { ReachDetail } from './content-reach.resource.js'

// The statements of content reading other than a reading's own (docs/content-reading.md).

/** The recipients query of reminders: the users recorded for a reminder (registered by each reading module under this name). */
export const CONTENT_REMINDER_RECIPIENTS = 'contentReminder:recipients'
export const reminderRecipientsSql = (tenantId: number, reminderId: number) =>
  sql<{ id: number }>`select rr.user_id as id from content_reminder_recipients rr
    where rr.tenant_id = ${tenantId} and rr.reminder_id = ${reminderId}`

/** The tenant's `reach_detail` (no row: `named`). */
export async function readReachDetail(db: Db, tenantId: number): Promise<ReachDetail> {
  const row = await db
    .selectFrom('reading_settings')
    .select('reach_detail')
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst()
  return row?.reach_detail ?? 'named'
}

/** Sets the tenant's `reach_detail` (one upsert, routed to the tenant's shard on Citus). */
export async function writeReachDetail(db: Db, tenantId: number, detail: ReachDetail): Promise<void> {
  await db
    .insertInto('reading_settings')
    .values({ tenant_id: tenantId, reach_detail: detail })
    .onConflict((oc) =>
      oc.column('tenant_id').doUpdateSet((eb) => ({
        reach_detail: eb.ref('excluded.reach_detail'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute()
}
