import type { App } from '../../platform/app-module.js'
import { Type } from 'typebox'
import { Envelope, envelope, errorResponses, IdParamsSchema, UuidParamsSchema } from '../../platform/http/schemas.js'
import { filterSchema, listQuerySchema, showQuerySchema } from '../../platform/query/list-query-schema.js'
import { sendList } from '../../platform/http/list-response.js'
import {
  MarkNotificationBodySchema,
  MarkNotificationsBodySchema,
  MarkTargetNotificationsBodySchema,
  NotificationSchema,
  NotificationSettingSchema,
  SendNotificationBodySchema,
  TargetParamsSchema,
  TargetTypeParamsSchema,
} from './notifications.schemas.js'
import { notificationResource, notificationSettingResource } from './notifications.resource.js'
import type { NotificationsService } from './notifications.service.js'
import type { NotificationsSendService } from './sending/send.service.js'
import type { NotificationStreams } from './stream/stream.js'

interface Services {
  notifications: NotificationsService
  sending: NotificationsSendService
  streams: NotificationStreams
}

const CountQuerySchema = Type.Object({ filter: Type.Optional(filterSchema(notificationResource)) })

export async function notificationsRoutes(app: App, { notifications, sending, streams }: Services): Promise<void> {
  const tags = ['notifications']
  const list = { 200: Type.Array(NotificationSchema), ...errorResponses }
  const changed = { 200: Envelope(Type.Integer()), ...errorResponses }

  app.get(
    '/api/notifications',
    { schema: { tags, querystring: listQuerySchema(notificationResource), response: list } },
    async (request, reply) => sendList(reply, await notifications.listNotifications(request.actor, request.query)),
  )
  app.get(
    '/api/notifications/count',
    { schema: { tags, querystring: CountQuerySchema, response: { 200: Type.Integer(), ...errorResponses } } },
    (request) => notifications.countNotifications(request.actor, request.query.filter),
  )
  app.get(
    '/api/notifications/stream',
    {
      // a stream stays open for hours: it counts against the rate limit, not among the requests in flight
      config: { inFlightLimit: false },
      schema: {
        tags,
        description:
          'Server-Sent Events: `notification` (a new record), `count` (`{"unread":N}`) and `sync` (`{}`, no id: something of the change feed changed in the tenant, on any server; at most one a second: sync with your cursor, GET /api/sync); a heartbeat comment every 25 s.',
        response: {
          200: {
            description: 'An event stream (text/event-stream) that stays open',
            content: { 'text/event-stream': { schema: Type.String() } },
          },
          ...errorResponses,
        },
      },
    },
    (request, reply) => streams.open(request.actor, request, reply),
  )
  app.get(
    '/api/notifications/type/:targetableType',
    {
      schema: {
        tags,
        params: TargetTypeParamsSchema,
        querystring: listQuerySchema(notificationResource),
        response: list,
      },
    },
    async (request, reply) =>
      sendList(reply, await notifications.listTargetNotifications(request.actor, request.params, request.query)),
  )
  app.get(
    '/api/notifications/type/:targetableType/:targetableId',
    {
      schema: { tags, params: TargetParamsSchema, querystring: listQuerySchema(notificationResource), response: list },
    },
    async (request, reply) =>
      sendList(reply, await notifications.listTargetNotifications(request.actor, request.params, request.query)),
  )
  app.get(
    '/api/notifications/:id',
    {
      schema: {
        tags,
        params: UuidParamsSchema,
        querystring: showQuerySchema(notificationResource),
        response: { 200: NotificationSchema, ...errorResponses },
      },
    },
    (request) => notifications.getNotification(request.actor, request.params.id, request.query),
  )

  app.post(
    '/api/notifications',
    {
      config: { rateLimit: 'expensive' },
      schema: { tags, body: SendNotificationBodySchema, response: { 202: Envelope(Type.Null()), ...errorResponses } },
    },
    async (request, reply) => {
      await sending.sendNotification(request.actor, request.body)
      return reply.code(202).send(envelope(null))
    },
  )
  app.put(
    '/api/notifications',
    { schema: { tags, body: MarkNotificationsBodySchema, response: changed } },
    async (request) => envelope(await notifications.markNotifications(request.actor, request.body)),
  )
  app.put(
    '/api/notifications/type/:targetableType',
    { schema: { tags, params: TargetTypeParamsSchema, body: MarkTargetNotificationsBodySchema, response: changed } },
    async (request) =>
      envelope(await notifications.markTargetNotifications(request.actor, request.params, request.body)),
  )
  app.put(
    '/api/notifications/type/:targetableType/:targetableId',
    { schema: { tags, params: TargetParamsSchema, body: MarkTargetNotificationsBodySchema, response: changed } },
    async (request) =>
      envelope(await notifications.markTargetNotifications(request.actor, request.params, request.body)),
  )
  app.put(
    '/api/notifications/:id',
    {
      schema: {
        tags,
        params: UuidParamsSchema,
        body: MarkNotificationBodySchema,
        response: { 200: Envelope(NotificationSchema), ...errorResponses },
      },
    },
    async (request) => envelope(await notifications.markNotification(request.actor, request.params.id, request.body)),
  )

  app.delete(
    '/api/administration/notifications/reset',
    { schema: { tags, response: { 200: Envelope(Type.Null()), ...errorResponses } } },
    async (request) => {
      await notifications.resetNotifications(request.actor)
      return envelope(null)
    },
  )

  const settingTags = ['notification-settings']
  app.get(
    '/api/notification-settings',
    {
      schema: {
        tags: settingTags,
        querystring: listQuerySchema(notificationSettingResource),
        response: { 200: Type.Array(NotificationSettingSchema), ...errorResponses },
      },
    },
    async (request, reply) =>
      sendList(reply, await notifications.listNotificationSettings(request.actor, request.query)),
  )
  app.get(
    '/api/notification-settings/:id',
    {
      schema: {
        tags: settingTags,
        params: IdParamsSchema,
        querystring: showQuerySchema(notificationSettingResource),
        response: { 200: NotificationSettingSchema, ...errorResponses },
      },
    },
    (request) => notifications.getNotificationSetting(request.actor, request.params.id, request.query),
  )
}
