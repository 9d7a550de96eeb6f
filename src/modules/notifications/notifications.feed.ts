import type { SyncChange } from '../../platform/sync/change-log.js'

/** The change feed's name of a notification (its resource's name, issue 43). */
export const NOTIFICATION_ENTITY = 'notification'

/** The change records of notifications created or marked: each is read only by its recipient. */
export const notificationChanges = (rows: { id: string; notifiable_id: number | string }[]): SyncChange[] =>
  rows.map((row) => ({ entity: NOTIFICATION_ENTITY, id: row.id, userId: Number(row.notifiable_id) }))
