import { Type } from 'typebox'
import type { App, AppDeps } from '../../../platform/app-module.js'
import { vapidKeys } from '../../../platform/keys/vapid-keys.js'
import { secretBoxFor } from '../../../platform/secrets/secret-box.js'
import { envelope, Envelope, errorResponses, IdParamsSchema, NoContentSchema } from '../../../platform/http/schemas.js'
import { changePreferences, readPreferences } from '../preferences/preferences.js'
import { listOwnSubscriptions, subscribe, unsubscribe } from './subscriptions.js'
import {
  NotificationPreferencesBodySchema,
  NotificationPreferencesSchema,
  PushSubscriptionBodySchema,
  PushSubscriptionSchema,
  VapidPublicKeySchema,
} from './push.schemas.js'

/** Web Push registration and the current user's channel preferences (issue 14, docs/notifications-delivery.md). */
export async function pushRoutes(app: App, { db, config }: AppDeps): Promise<void> {
  const tags = ['push']
  const box = secretBoxFor(config.secrets)
  app.get(
    '/api/push/vapid-public-key',
    {
      schema: {
        tags,
        summary: "The API's VAPID public key (the browser's applicationServerKey)",
        response: { 200: VapidPublicKeySchema, ...errorResponses },
      },
    },
    async () => ({ public_key: (await vapidKeys(db, box)).publicKey }),
  )

  app.post(
    '/api/push-subscriptions',
    {
      schema: {
        tags,
        summary:
          "Registers the browser's PushSubscription for the current user (the same endpoint again: 200, moved to this user); a new endpoint past the organisation's push_subscriptions quota: 403 `quota_exceeded`",
        body: PushSubscriptionBodySchema,
        response: { 200: Envelope(PushSubscriptionSchema), 201: Envelope(PushSubscriptionSchema), ...errorResponses },
      },
    },
    async (request, reply) => {
      const { subscription, created } = await subscribe(db, request.actor, request.body, {
        allowPrivateNetworks: config.push.allowPrivateNetworks,
        quotas: config.limits.quotas,
      })
      return reply.code(created ? 201 : 200).send(envelope(subscription))
    },
  )

  app.get(
    '/api/push-subscriptions',
    {
      schema: {
        tags,
        summary: "The current user's push subscriptions",
        response: { 200: Type.Array(PushSubscriptionSchema), ...errorResponses },
      },
    },
    (request) => listOwnSubscriptions(db, request.actor),
  )

  app.delete(
    '/api/push-subscriptions/:id',
    {
      schema: {
        tags,
        summary: "Removes one of the current user's push subscriptions",
        params: IdParamsSchema,
        response: { 204: NoContentSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      await unsubscribe(db, request.actor, request.params.id)
      return reply.code(204).send()
    },
  )

  app.get(
    '/api/users/current/notification-preferences',
    {
      schema: {
        tags,
        summary: 'Push and email per notification category, and the email digest',
        response: { 200: NotificationPreferencesSchema, ...errorResponses },
      },
    },
    (request) => readPreferences(db, request.actor),
  )

  app.put(
    '/api/users/current/notification-preferences',
    {
      schema: {
        tags,
        summary: 'Changes some categories (a partial array, or {email_digest, preferences})',
        body: NotificationPreferencesBodySchema,
        response: { 200: NotificationPreferencesSchema, ...errorResponses },
      },
    },
    (request) => changePreferences(db, request.actor, request.body),
  )
}
