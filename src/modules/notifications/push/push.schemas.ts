import { Type, type Static } from 'typebox'
import { IdSchema, Nullable, TimestampSchema } from '../../../platform/http/schemas.js'

const Base64Url = (description: string) =>
  Type.String({ pattern: '^[A-Za-z0-9_-]+={0,2}$', maxLength: 200, description })

/** The browser's `PushSubscription.toJSON()` (W3C Push API), plus an optional label. */
export const PushSubscriptionBodySchema = Type.Object(
  {
    endpoint: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'The push service URL the browser was given (https)',
    }),
    expirationTime: Type.Optional(
      Nullable(Type.Number({ description: 'When the subscription expires (ms since epoch), or null' })),
    ),
    keys: Type.Object(
      {
        p256dh: Base64Url('The user agent public key: an uncompressed P-256 point (65 bytes), base64url'),
        auth: Base64Url('The authentication secret: 16 bytes, base64url'),
      },
      { additionalProperties: false },
    ),
    user_agent: Type.Optional(Type.String({ maxLength: 512 })),
  },
  { additionalProperties: false },
)
export type PushSubscriptionBody = Static<typeof PushSubscriptionBodySchema>

export const PushSubscriptionSchema = Type.Object({
  id: IdSchema,
  endpoint: Type.String(),
  expiration_time: Nullable(Type.Number()),
  user_agent: Nullable(Type.String()),
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
})

export const VapidPublicKeySchema = Type.Object({
  public_key: Type.String({ description: 'base64url of the uncompressed P-256 point (applicationServerKey)' }),
})

export const EmailDigestSchema = Type.Union([Type.Literal('immediate'), Type.Literal('daily'), Type.Literal('weekly')])

export const NotificationPreferenceSchema = Type.Object({
  notification_setting_id: IdSchema,
  key: Type.String({ description: 'The category (notification setting key)' }),
  push: Type.Boolean(),
  email: Type.Boolean(),
})

export const NotificationPreferencesSchema = Type.Object({
  email_digest: EmailDigestSchema,
  preferences: Type.Array(NotificationPreferenceSchema),
})

const PreferenceChangeSchema = Type.Object(
  {
    notification_setting_id: IdSchema,
    push: Type.Optional(Type.Boolean()),
    email: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export type PreferenceChange = Static<typeof PreferenceChangeSchema>

/** A partial array of changes, or an object with `email_digest` and/or `preferences`. */
export const NotificationPreferencesBodySchema = Type.Union([
  Type.Array(PreferenceChangeSchema, { maxItems: 100 }),
  Type.Object(
    {
      email_digest: Type.Optional(EmailDigestSchema),
      preferences: Type.Optional(Type.Array(PreferenceChangeSchema, { maxItems: 100 })),
    },
    { additionalProperties: false },
  ),
])
export type NotificationPreferencesBody = Static<typeof NotificationPreferencesBodySchema>
