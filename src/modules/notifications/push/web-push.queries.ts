import type { Insertable } from 'kysely'
import type { Db, PushDeliveriesTable } from '../../../platform/db/schema.js'

const SUBSCRIPTION_COLUMNS = ['id', 'user_id', 'endpoint', 'p256dh', 'auth'] as const

/** The devices of these users, with the keys a push is encrypted for. */
export function selectSubscriptionsOfUsers(db: Db, tenantId: number, userIds: number[]) {
  return db
    .selectFrom('push_subscriptions')
    .select(SUBSCRIPTION_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where('user_id', 'in', userIds)
    .execute()
}

export function findSubscription(db: Db, tenantId: number, id: number) {
  return db
    .selectFrom('push_subscriptions')
    .select(SUBSCRIPTION_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst()
}

/** Deletes a subscription its push service called gone. */
export async function deleteSubscription(db: Db, tenantId: number, id: number): Promise<void> {
  await db.deleteFrom('push_subscriptions').where('tenant_id', '=', tenantId).where('id', '=', id).execute()
}

/** Records one push attempt. */
export async function insertPushDelivery(db: Db, delivery: Insertable<PushDeliveriesTable>): Promise<void> {
  await db.insertInto('push_deliveries').values(delivery).execute()
}

/** The (notification, subscription) pairs attempted for these records. */
export function selectAttemptedDeliveries(db: Db, tenantId: number, notificationIds: string[]) {
  return db
    .selectFrom('push_deliveries')
    .select(['notification_id', 'subscription_id'])
    .where('tenant_id', '=', tenantId)
    .where('notification_id', 'in', notificationIds)
    .execute()
}

/** An attempt of this (notification, subscription) numbered `attempt` or later, if one was made. */
export function findDeliveryAttempt(
  db: Db,
  tenantId: number,
  notificationId: string,
  subscriptionId: number,
  attempt: number,
) {
  return db
    .selectFrom('push_deliveries')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('notification_id', '=', notificationId)
    .where('subscription_id', '=', subscriptionId)
    .where('attempt', '>=', attempt)
    .executeTakeFirst()
}
