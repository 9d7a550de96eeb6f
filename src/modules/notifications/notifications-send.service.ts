import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import type { Db } from '../../platform/db/schema.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { FieldErrorCollector } from '../../platform/http/errors.js'
import { enqueue } from '../../platform/jobs/jobs.js'
import * as queries from './notifications.queries.js'
import { MAX_BODY_BYTES, type SendNotificationBody } from './notifications.schemas.js'
import { isAllowedNotificationUrl, sanitizeNotificationBody } from './notification-html.js'
import { fanOutInTransaction, type FanOutPayload } from './notifications-fan-out.js'
import { genericNotificationSpec } from './notifications.jobs.js'

/**
 * A send to at most this many listed users (no departments) creates its records in its own
 * transaction: one job fewer per send, and the records exist when the 202 goes out. The delivery
 * (email, push) still runs in the worker. Larger sends are fanned out by the worker, in chunks.
 */
export const INLINE_FAN_OUT_MAX = 100

export type NotificationsSendService = ReturnType<typeof createNotificationsSendService>

export function createNotificationsSendService({ db }: Pick<AppDeps, 'db'>) {
  /**
   * Sends a generic notification: validates it, then stores the send, creates the records of a small
   * send or queues the fan-out of a larger one, and records `notification.sent`, in one transaction.
   * Delivery happens in the worker (the caller gets 202).
   */
  async function sendNotification(actor: Actor, body: SendNotificationBody): Promise<void> {
    requirePermission(actor, 'notifications.send')
    const problems = new FieldErrorCollector()
    const userIds = [...new Set(body.user_ids ?? [])]
    const departmentIds = [...new Set(body.department_ids ?? [])]
    if (body.title.trim() === '') problems.add('title', 'must not be blank')
    if (Buffer.byteLength(body.body, 'utf8') > MAX_BODY_BYTES) problems.add('body', `must be at most ${MAX_BODY_BYTES} bytes`)
    if (!isAllowedNotificationUrl(body.url)) problems.add('url', 'must be an absolute http(s) URL or an app path starting with "/"')
    if (userIds.length === 0 && departmentIds.length === 0) {
      problems.add('user_ids', 'user_ids or department_ids must list at least one recipient')
      problems.add('department_ids', 'user_ids or department_ids must list at least one recipient')
    }
    problems.throwIfAny()

    const values = { title: body.title, body: sanitizeNotificationBody(body.body), url: body.url, userId: actor.userId, userIds, departmentIds }
    /** The send, stored only if every listed recipient exists (one statement); else 422 naming the missing IDs. */
    const store = async (trx: Db) => {
      const sent = await queries.insertGenericNotification(trx, actor.tenantId, values, { onlyIfRecipientsExist: true })
      if (sent) return sent
      const missingUsers = await queries.findMissingUserIds(trx, actor.tenantId, userIds)
      const missingDepartments = await queries.findMissingDepartmentIds(trx, actor.tenantId, departmentIds)
      if (missingUsers.length > 0) problems.add('user_ids', `unknown user IDs: ${missingUsers.join(', ')}`)
      if (missingDepartments.length > 0) problems.add('department_ids', `unknown department IDs: ${missingDepartments.join(', ')}`)
      problems.throwIfAny()
      // a recipient came back between the two statements: the check above is the later one
      const stored = await queries.insertGenericNotification(trx, actor.tenantId, values)
      if (!stored) throw new Error('the generic notification insert returned no row')
      return stored
    }
    await db.transaction().execute(async (trx) => {
      const sent = await store(trx)
      if (departmentIds.length === 0 && userIds.length <= INLINE_FAN_OUT_MAX) {
        await fanOutInTransaction(trx, genericNotificationSpec(actor.tenantId, sent))
      } else {
        const payload: FanOutPayload = { tenantId: actor.tenantId, genericNotificationId: sent.id }
        await enqueue(trx, 'notifications:fan_out', payload, { key: `notifications:fan_out:genericNotification:${sent.id}`, maxAttempts: 10 })
      }
      await recordDomainEvent(trx, {
        type: 'notification.sent', tenantId: actor.tenantId, actorId: actor.userId,
        subjectType: 'genericNotification', subjectId: sent.id,
        data: { title: body.title, url: body.url, user_ids: userIds, department_ids: departmentIds },
      })
    })
  }

  return { sendNotification }
}
