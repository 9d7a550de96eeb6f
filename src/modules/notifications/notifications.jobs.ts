import type { AppDeps } from '../../platform/app-module.js'
import type { Db } from '../../platform/db/schema.js'
import { jobOf, type JobHandlers } from '../../platform/jobs/jobs.js'
import * as queries from './notifications.queries.js'
import { recordSyncWrites } from '../../platform/sync/change-log.js'
import { deliverNotifications, pushMessageOf, type DeliveryDeps } from './delivery/delivery.js'
import { sendDueDigests } from './delivery/digest.js'
import {
  fanOutNotifications,
  type DeliverPayload,
  type FanOutPayload,
  type NotificationSpec,
} from './sending/fan-out.js'
import { createMailer } from './delivery/mailer.js'
import { createWebPushSender, PUSH_RETRY_JOB, type PushRetryPayload } from './push/web-push.js'

/** Read notifications deleted per statement by the retention job. */
const RETENTION_BATCH_SIZE = 5000
export const GENERIC_NOTIFICATION = 'genericNotification'

/** Runs a queued fan-out (a generic send, or a spec queued by a content module). Idempotent. */
export async function runFanOut(db: Db, payload: FanOutPayload, signal?: AbortSignal): Promise<number> {
  if ('spec' in payload) return fanOutNotifications(db, payload.spec, signal)
  const sent = await queries.findGenericNotification(db, payload.tenantId, payload.genericNotificationId)
  if (!sent) return 0 // the tenant was deleted meanwhile
  return fanOutNotifications(db, genericNotificationSpec(payload.tenantId, sent), signal)
}

/** The records a generic notification (a send through `POST /api/notifications`) creates. */
export function genericNotificationSpec(
  tenantId: number,
  sent: { id: number; title: string; body: string; url: string; user_ids: number[]; department_ids: number[] },
): NotificationSpec {
  return {
    tenantId,
    type: GENERIC_NOTIFICATION,
    targetableType: GENERIC_NOTIFICATION,
    targetableId: sent.id,
    sourceKey: `${GENERIC_NOTIFICATION}:${sent.id}`,
    data: { title: sent.title, body: sent.body, url: sent.url },
    recipients: { userIds: sent.user_ids, departmentIds: sent.department_ids },
  }
}

/** Deletes read notifications older than the retention period (unset = keep forever), in batches. */
export async function purgeReadNotifications(
  db: Db,
  retentionDays: number | undefined,
  now = new Date(),
): Promise<number> {
  if (retentionDays === undefined) return 0
  const cutOff = new Date(now.getTime() - retentionDays * 24 * 60 * 60 * 1000)
  let deleted = 0
  for (;;) {
    // with an access change for each tenant concerned (one statement each, tenants in order): offline
    // clients' views are recomputed and the records gone removed (issue 43)
    const batch = await db.transaction().execute(async (trx) => {
      const tenants = await queries.deleteReadNotificationsBatch(trx, cutOff, RETENTION_BATCH_SIZE)
      for (const tenantId of [...new Set(tenants)].sort((a, b) => a - b))
        await recordSyncWrites(trx, tenantId, { access: [{ scope: 'tenant' }] })
      return tenants.length
    })
    deleted += batch
    if (batch < RETENTION_BATCH_SIZE) return deleted
  }
}

/** The delivery dependencies of a worker: SMTP when configured (else stored messages), Web Push. */
export function createDeliveryDeps({
  db,
  config,
  log,
}: AppDeps): DeliveryDeps & { pushRetry: ReturnType<typeof createWebPushSender>['retry'] } {
  const push = createWebPushSender({ config, log })
  return {
    db,
    log,
    appUrl: config.appUrl,
    mailer: createMailer({ smtpUrl: config.smtpUrl, appUrl: config.appUrl, log }),
    push: push.sender,
    pushRetry: push.retry,
  }
}

/** A stored record as a push message (for a later attempt). */
async function loadPushMessage(db: Db, appUrl: string, tenantId: number, notificationId: string) {
  const row = await queries.findNotificationForPush(db, tenantId, notificationId)
  return row && pushMessageOf(tenantId, row, appUrl)
}

export function notificationJobs(deps: AppDeps): JobHandlers {
  const delivery = createDeliveryDeps(deps)
  return {
    [PUSH_RETRY_JOB]: jobOf<PushRetryPayload>((payload) =>
      delivery.pushRetry(deps.db, payload, (db, tenantId, id) => loadPushMessage(db, deps.config.appUrl, tenantId, id)),
    ),
    'notifications:digest': async () => {
      const sent = await sendDueDigests({ ...delivery, digestHour: deps.config.digestHour })
      if (sent > 0) deps.log.info({ sent }, 'email digests sent')
    },
    'notifications:fan_out': jobOf<FanOutPayload>(async (payload, helpers) => {
      await runFanOut(deps.db, payload, helpers.abortSignal)
    }),
    'notifications:deliver': jobOf<DeliverPayload>((payload) => deliverNotifications(delivery, payload)),
    'notifications:purge_read': async () => {
      const deleted = await purgeReadNotifications(deps.db, deps.config.notificationRetentionDays)
      if (deleted > 0) deps.log.info({ deleted }, 'notification retention: read notifications deleted')
    },
  }
}

/** Retention daily at 03:15 UTC; digests checked hourly (they go out at DIGEST_HOUR). */
export const NOTIFICATION_CRON = ['15 3 * * * notifications:purge_read', '0 * * * * notifications:digest']
