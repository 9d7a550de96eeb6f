import { sql } from 'kysely'
import type { Db } from '../../../platform/db/schema.js'
import type { QuotaCounter } from '../../../platform/limits/quotas.js'
import type { PushSubscriptionBody } from './push.schemas.js'

const COLUMNS = ['id', 'endpoint', 'expiration_time', 'user_agent', 'created_at', 'updated_at'] as const

export function findSubscriptionByEndpoint(db: Db, tenantId: number, endpoint: string) {
  return db
    .selectFrom('push_subscriptions')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('endpoint', '=', endpoint)
    .executeTakeFirst()
}

/** Stores the subscription for the user, or moves a known endpoint to them; `inserted` tells which. */
export function upsertSubscription(db: Db, tenantId: number, userId: number, body: PushSubscriptionBody) {
  return db
    .insertInto('push_subscriptions')
    .values({
      tenant_id: tenantId,
      user_id: userId,
      endpoint: body.endpoint,
      p256dh: body.keys.p256dh,
      auth: body.keys.auth,
      expiration_time: body.expirationTime ?? null,
      user_agent: body.user_agent ?? null,
      updated_at: sql`now()`,
    })
    .onConflict((oc) =>
      oc.columns(['tenant_id', 'endpoint']).doUpdateSet({
        // the time in VALUES, not in DO UPDATE SET: Citus refuses non-immutable functions there (docs/citus.md)
        user_id: userId,
        p256dh: body.keys.p256dh,
        auth: body.keys.auth,
        expiration_time: body.expirationTime ?? null,
        user_agent: body.user_agent ?? null,
        updated_at: sql`excluded.updated_at`,
      }),
    )
    .returning([...COLUMNS, sql<boolean>`xmax = 0`.as('inserted')])
    .executeTakeFirstOrThrow()
}

export function selectUserSubscriptions(db: Db, tenantId: number, userId: number) {
  return db
    .selectFrom('push_subscriptions')
    .select(COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .orderBy('id')
    .execute()
}

/** Deletes the user's subscription with this id; how many were deleted (0 or 1). */
export async function deleteUserSubscription(db: Db, tenantId: number, userId: number, id: number) {
  const deleted = await db
    .deleteFrom('push_subscriptions')
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .executeTakeFirst()
  return Number(deleted.numDeletedRows)
}

/** A user deleted, blacked out or logged out everywhere: their devices get nothing more (same transaction). */
export async function deleteUserSubscriptions(db: Db, tenantId: number, userId: number): Promise<void> {
  await db.deleteFrom('push_subscriptions').where('tenant_id', '=', tenantId).where('user_id', '=', userId).execute()
}

/** The push subscriptions quota: the tenant's subscriptions, of every user (docs/limits.md). */
export const pushSubscriptionsQuota: QuotaCounter = {
  name: 'push_subscriptions',
  used: (tenantId) => sql`(select count(*) from push_subscriptions where tenant_id = ${tenantId})`,
}
