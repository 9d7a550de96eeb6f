import type { Db } from '../../../platform/db/schema.js'

export const DEFAULT_NOTIFICATION_SETTINGS = ['general', 'infoboard', 'manuals', 'tasks', 'forms', 'calendar'] as const

/** Seeds the delivery categories of a new tenant (contract 40). */
export async function insertDefaultNotificationSettings(db: Db, tenantId: number): Promise<void> {
  await db
    .insertInto('notification_settings')
    .values(DEFAULT_NOTIFICATION_SETTINGS.map((key, index) => ({ tenant_id: tenantId, key, sort_number: index + 1 })))
    .onConflict((oc) => oc.columns(['tenant_id', 'key']).doNothing())
    .execute()
}

export async function notificationSettingExists(db: Db, tenantId: number, id: number): Promise<boolean> {
  const row = await db
    .selectFrom('notification_settings')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst()
  return row !== undefined
}
