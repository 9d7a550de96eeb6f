import type { Db } from '../../platform/db/schema.js'

export interface PushMessage {
  tenantId: number
  userId: number
  notificationId: string
  title: string
  body: string
  url: string
}

/** A push channel. Device registration is out of scope; a real driver (FCM/APNs/Web Push) plugs in here. */
export interface PushSender {
  send(db: Db, messages: PushMessage[]): Promise<void>
}

/** Stores each payload in `outbound_messages` (no push service is reachable); idempotent per notification. */
export function createStoredPushSender(): PushSender {
  return {
    async send(db, messages) {
      if (messages.length === 0) return
      await db.insertInto('outbound_messages')
        .values(messages.map((m) => ({
          tenant_id: m.tenantId, channel: 'push' as const, status: 'stored' as const, user_id: m.userId, notification_id: m.notificationId,
          subject: m.title, payload: JSON.stringify({ title: m.title, body: m.body, url: m.url, notification_id: m.notificationId }),
        })))
        .onConflict((oc) => oc.columns(['tenant_id', 'channel', 'notification_id']).doNothing())
        .execute()
    },
  }
}
