import type { AppDeps } from '../../platform/app-module.js'
import { actingUserId, type Actor } from '../../platform/auth/actor.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { notFound } from '../../platform/http/errors.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { shapedStatement, executeCompiled } from '../../platform/db/database.js'
import { applyFilters } from '../../platform/query/apply-query.js'
import { parseFilterOnly, type ParsedQuery, type RawListQuery } from '../../platform/query/parse-query.js'
import type { QueryContext } from '../../platform/query/resource.js'
import { listResource, showResource } from '../../platform/query/run-query.js'
import { publish } from '../../platform/realtime/pg-pubsub.js'
import type { Db } from '../../platform/db/schema.js'
import { recordSyncWrites, withSyncWrites, writeWithSyncChanges } from '../../platform/sync/change-log.js'
import { NOTIFICATION_ENTITY, notificationChanges } from './notifications.feed.js'
import * as queries from './notifications.queries.js'
import { NOTIFICATIONS_CHANNEL, type NotificationsChannelMessage } from './sending/fan-out.js'
import { notificationResource, notificationSettingResource } from './notifications.resource.js'
import type { MarkNotificationBody, MarkNotificationsBody, TargetParams } from './notifications.schemas.js'
import { parseSeenRead } from './notifications.timestamps.js'

export type NotificationsService = ReturnType<typeof createNotificationsService>

/** Records deleted per statement by the reset: short locks even for a tenant with millions. */
const RESET_BATCH_SIZE = 5000

/** `config` only gives links to relations; the change feed reads lists without it (notifications.sync.ts). */
export function createNotificationsService({ db, config }: Pick<AppDeps, 'db'> & Partial<Pick<AppDeps, 'config'>>) {
  const ctx = (actor: Actor): QueryContext => ({
    db,
    tenantId: actor.tenantId,
    actor,
    baseUrl: config?.baseUrl,
    appUrl: config?.appUrl,
  })
  const own = (actor: Actor) => queries.selectOwnNotifications(db, actor.tenantId, actor.userId)
  const ownOfTarget = (actor: Actor, target: TargetParams) => {
    let query = own(actor).where('n.targetable_type', '=', target.targetableType)
    if (target.targetableId !== undefined) query = query.where('n.targetable_id', '=', Number(target.targetableId))
    return query
  }
  const announceCount = (actor: Actor) => {
    const message: NotificationsChannelMessage = { tenantId: actor.tenantId, userIds: [actor.userId] }
    return publish(db, NOTIFICATIONS_CHANNEL, message)
  }

  /** A mark and its change records for offline clients (issue 43), in one transaction; the records changed. */
  const marked = (actor: Actor, write: (trx: Db) => Promise<{ id: string; notifiable_id: number }[]>) =>
    withSyncWrites(db, actor.tenantId, async (trx, record) => {
      const rows = await write(trx)
      await record({ changes: notificationChanges(rows) })
      return rows.length
    })

  const ownOf = ({ tenantId, userId }: { tenantId: number; userId: number }) =>
    queries.selectOwnNotifications(db, tenantId, userId)

  /** Lists the requester's own notifications (newest first by default). */
  async function listNotifications(actor: Actor, query: RawListQuery) {
    return listResource(ctx(actor), notificationResource, { build: ownOf, values: { userId: actor.userId } }, query)
  }

  /** Lists the requester's notifications about one target type (and ID). */
  async function listTargetNotifications(actor: Actor, target: TargetParams, query: RawListQuery) {
    return listResource(ctx(actor), notificationResource, ownOfTarget(actor, target), query)
  }

  /** The count of a user's notifications matching plain filters, built once per filter set (the badge polls it). */
  const ownCount = shapedStatement(({ tenantId, userId }: { tenantId: number; userId: number }, parsed: ParsedQuery) =>
    queries.countQuery(
      applyFilters(queries.selectOwnNotifications(db, tenantId, userId), notificationResource, parsed, {
        db,
        tenantId,
      }),
    ),
  )

  /** Counts the requester's notifications matching the filters (e.g. `filter[read_at]=null`). */
  async function countNotifications(actor: Actor, filter: unknown) {
    const parsed = parseFilterOnly(notificationResource, filter, ctx(actor))
    // a custom filter's SQL may read more of the request than the shape holds: never shaped
    if (parsed.customFilters.length > 0)
      return queries.countNotifications(applyFilters(own(actor), notificationResource, parsed, ctx(actor)))
    const [row] = await executeCompiled(db, ownCount({ tenantId: actor.tenantId, userId: actor.userId }, parsed))
    return Number(row.count)
  }

  /** Shows one of the requester's notifications; another user's is not found. */
  async function getNotification(actor: Actor, id: string, query: RawListQuery = {}) {
    return showResource(ctx(actor), notificationResource, own(actor).where('n.id', '=', id), query, 'Notification')
  }

  /** Marks the requester's UNREAD notifications matching `filter` seen/read; the number changed. */
  async function markNotifications(actor: Actor, body: MarkNotificationsBody) {
    const change = parseSeenRead(body)
    const parsed = parseFilterOnly(notificationResource, body.filter, ctx(actor))
    const matching = applyFilters(own(actor), notificationResource, parsed, ctx(actor))
    const changed = await marked(actor, (trx) =>
      queries.markUnreadNotifications(trx, actor.tenantId, actor.userId, change, matching),
    )
    if (changed > 0) await announceCount(actor)
    return changed
  }

  /** Marks the requester's UNREAD notifications of one target type (and ID) seen/read; the number changed. */
  async function markTargetNotifications(
    actor: Actor,
    target: TargetParams,
    body: { seen_at?: string; read_at?: string },
  ) {
    const change = parseSeenRead(body)
    const changed = await marked(actor, (trx) =>
      queries.markUnreadNotifications(trx, actor.tenantId, actor.userId, change, ownOfTarget(actor, target)),
    )
    if (changed > 0) await announceCount(actor)
    return changed
  }

  /** Sets seen_at/read_at of one own notification; null marks it unseen/unread again. */
  async function markNotification(actor: Actor, id: string, body: MarkNotificationBody) {
    const change = parseSeenRead(body)
    // one statement with its change record where the platform can (a transaction of several holds the
    // tenant's sync clock row longer: S7 0.96 → 0.36 of the baseline)
    const inOne = await writeWithSyncChanges(
      db,
      actor.tenantId,
      NOTIFICATION_ENTITY,
      queries.markNotificationSql(db, actor.tenantId, actor.userId, id, change),
    )
    const updated =
      inOne?.length ??
      (await marked(actor, async (trx) => {
        const row = await queries.markNotification(trx, actor.tenantId, actor.userId, id, change)
        return row ? [row] : []
      }))
    if (!updated) throw notFound('Notification')
    await announceCount(actor)
    return getNotification(actor, id)
  }

  /** Permanently deletes every notification of the tenant, in batches; settings stay. */
  async function resetNotifications(actor: Actor) {
    requirePermission(actor, 'notifications.reset')
    let deleted = 0
    // each batch with an access change for everyone: offline clients' views are recomputed, the records gone removed
    const deleteBatch = () =>
      db.transaction().execute(async (trx) => {
        const batch = await queries.deleteTenantNotificationsBatch(trx, actor.tenantId, RESET_BATCH_SIZE)
        if (batch > 0) await recordSyncWrites(trx, actor.tenantId, { access: [{ scope: 'tenant' }] })
        return batch
      })
    for (let batch; (batch = await deleteBatch()) > 0;) deleted += batch
    // the reset runs in short batches (no one transaction to join): recorded once it is complete
    await recordDomainEvent(db, {
      type: 'notifications.cleared',
      tenantId: actor.tenantId,
      actorId: actingUserId(actor),
      subjectType: 'tenant',
      subjectId: actor.tenantId,
      data: { deleted },
      audit: { deleted },
    })
    const message: NotificationsChannelMessage = { tenantId: actor.tenantId, userIds: null }
    await publish(db, NOTIFICATIONS_CHANNEL, message)
  }

  /** Lists the tenant's notification settings (any authenticated user). */
  async function listNotificationSettings(actor: Actor, query: RawListQuery) {
    return listResource(
      ctx(actor),
      notificationSettingResource,
      queries.selectNotificationSettings(db, actor.tenantId),
      query,
    )
  }

  /** Shows one notification setting of the tenant. */
  async function getNotificationSetting(actor: Actor, id: number, query: RawListQuery = {}) {
    return showResource(
      ctx(actor),
      notificationSettingResource,
      queries.selectNotificationSettings(db, actor.tenantId).where('s.id', '=', id),
      query,
      'Notification setting',
    )
  }

  return {
    listNotifications,
    listTargetNotifications,
    countNotifications,
    getNotification,
    markNotifications,
    markTargetNotifications,
    markNotification,
    resetNotifications,
    listNotificationSettings,
    getNotificationSetting,
  }
}
