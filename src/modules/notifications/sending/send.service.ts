import type { AppDeps } from '../../../platform/app-module.js'
import type { Actor } from '../../../platform/auth/actor.js'
import type { Db } from '../../../platform/db/schema.js'
import { requirePermission } from '../../../platform/auth/require-permission.js'
import { reserveIds } from '../../../platform/db/database.js'
import { domainEventWrites, recordDomainEvent, type DomainEvent } from '../../../platform/events/domain-events.js'
import { FieldErrorCollector } from '../../../platform/http/errors.js'
import { enqueue } from '../../../platform/jobs/jobs.js'
import * as queries from '../notifications.queries.js'
import { MAX_BODY_BYTES, type SendNotificationBody } from '../notifications.schemas.js'
import { isAllowedNotificationUrl, sanitizeNotificationBody } from './body-html.js'
import { fanOutInTransaction, listedRecordsWrite, type FanOutPayload } from './fan-out.js'
import { genericNotificationSpec } from '../notifications.jobs.js'
import { insertSendInOneStatement } from './send.queries.js'

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
    if (Buffer.byteLength(body.body, 'utf8') > MAX_BODY_BYTES)
      problems.add('body', `must be at most ${MAX_BODY_BYTES} bytes`)
    if (!isAllowedNotificationUrl(body.url))
      problems.add('url', 'must be an absolute http(s) URL or an app path starting with "/"')
    if (userIds.length === 0 && departmentIds.length === 0) {
      problems.add('user_ids', 'user_ids or department_ids must list at least one recipient')
      problems.add('department_ids', 'user_ids or department_ids must list at least one recipient')
    }
    problems.throwIfAny()

    const values: queries.GenericNotificationValues = {
      title: body.title,
      body: sanitizeNotificationBody(body.body),
      url: body.url,
      userId: actor.userId,
      userIds,
      departmentIds,
    }
    /** The send, stored if every listed recipient exists; else 422 naming the missing IDs. */
    const store = async (trx: Db) => {
      const missingUsers = await queries.findMissingUserIds(trx, actor.tenantId, userIds)
      const missingDepartments = await queries.findMissingDepartmentIds(trx, actor.tenantId, departmentIds)
      if (missingUsers.length > 0) problems.add('user_ids', `unknown user IDs: ${missingUsers.join(', ')}`)
      if (missingDepartments.length > 0)
        problems.add('department_ids', `unknown department IDs: ${missingDepartments.join(', ')}`)
      problems.throwIfAny()
      const stored = await queries.insertGenericNotification(trx, actor.tenantId, values)
      if (!stored) throw new Error('the generic notification insert returned no row')
      return stored
    }
    const sentEvent = (id: number): DomainEvent => ({
      type: 'notification.sent',
      tenantId: actor.tenantId,
      actorId: actor.userId,
      subjectType: 'genericNotification',
      subjectId: id,
      data: { title: body.title, url: body.url, user_ids: userIds, department_ids: departmentIds },
    })
    const small = departmentIds.length === 0 && userIds.length <= INLINE_FAN_OUT_MAX
    if (small && (await sendInOneStatement(actor, values, sentEvent))) return
    await db.transaction().execute(async (trx) => {
      const sent = await store(trx)
      if (small) {
        await fanOutInTransaction(trx, genericNotificationSpec(actor.tenantId, sent))
      } else {
        const payload: FanOutPayload = { tenantId: actor.tenantId, genericNotificationId: sent.id }
        await enqueue(trx, 'notifications:fan_out', payload, {
          key: `notifications:fan_out:genericNotification:${sent.id}`,
          maxAttempts: 10,
        })
      }
      await recordDomainEvent(trx, sentEvent(sent.id))
    })
  }

  /**
   * A small send to listed users as one statement with no transaction of its own (decision 0005,
   * sixth pass): the send (its id reserved), its records, their delivery job and the
   * `notification.sent` event, written only if every listed user is a recipient and no event
   * subscriber (an active automation) has work. False, with nothing written, otherwise: the
   * transactional way then names the missing users or runs those subscribers.
   */
  async function sendInOneStatement(
    actor: Actor,
    values: queries.GenericNotificationValues,
    sentEvent: (id: number) => DomainEvent,
  ): Promise<boolean> {
    const [id] = await reserveIds(db, 1)
    const spec = genericNotificationSpec(actor.tenantId, {
      ...values,
      id: id!,
      user_ids: values.userIds,
      department_ids: values.departmentIds,
    })
    const events = domainEventWrites([sentEvent(id!)])
    if (!events) return false
    const records = listedRecordsWrite(db, spec)
    const wrote = await insertSendInOneStatement(db, actor.tenantId, { ...values, id: id! }, records, events)
    if (wrote) await records.announce()
    return wrote
  }

  return { sendNotification }
}
