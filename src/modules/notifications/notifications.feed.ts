import type { SyncChange } from '../../platform/sync/change-log.js'

/** The change feed's name of a notification (its resource's name, issue 43). */
export const NOTIFICATION_ENTITY = 'notification'

/** The change records of notifications created or marked: each is read only by its recipient. */
export const notificationChanges = (rows: { id: string; notifiable_id: number | string }[]): SyncChange[] =>
  rows.map((row) => ({ entity: NOTIFICATION_ENTITY, id: row.id, userId: Number(row.notifiable_id) }))

/** The change feed's name of a user's notification preferences (one record per user, its id the user's). */
export const NOTIFICATION_PREFERENCES_ENTITY = 'notificationPreferences'

/** The change record of a user's preferences changed: read only by that user. */
export const preferencesChange = (userId: number): SyncChange => ({
  entity: NOTIFICATION_PREFERENCES_ENTITY,
  id: userId,
  userId,
})
