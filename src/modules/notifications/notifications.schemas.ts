import { Type, type Static } from 'typebox'
import {
  EXPECTED,
  IdSchema,
  Nullable,
  NullableTimestampSchema,
  TimestampInputSchema,
  TimestampSchema,
} from '../../platform/http/schemas.js'

const Opt = Type.Optional
const OpenObject = Type.Object({}, { additionalProperties: true })

/** A notification as returned by the API; fields are optional because `selects` may drop them. */
export const NotificationSchema = Type.Object(
  {
    id: Opt(Type.String()),
    type: Opt(Type.String()),
    notifiable_type: Opt(Type.String()),
    notifiable_id: Opt(Type.Integer()),
    targetable_type: Opt(Type.String()),
    targetable_id: Opt(Type.Integer()),
    data: Opt(
      Type.Object(
        { title: Opt(Type.String()), body: Opt(Type.String()), url: Opt(Type.String()) },
        { additionalProperties: true },
      ),
    ),
    seen_at: Opt(NullableTimestampSchema),
    read_at: Opt(NullableTimestampSchema),
    created_at: Opt(TimestampSchema),
    updated_at: Opt(TimestampSchema),
    notifiable: Opt(Nullable(OpenObject)),
    targetable: Opt(Nullable(OpenObject)),
  },
  { $id: 'Notification' },
)

export const NotificationSettingSchema = Type.Object(
  {
    id: Opt(Type.Integer()),
    key: Opt(Type.String()),
    sort_number: Opt(Type.Integer()),
  },
  { $id: 'NotificationSetting' },
)

export const TargetTypeParamsSchema = Type.Object({ targetableType: Type.String({ minLength: 1, maxLength: 100 }) })
export const TargetParamsSchema = Type.Object({
  targetableType: Type.String({ minLength: 1, maxLength: 100 }),
  targetableId: Type.String({ pattern: '^[0-9]{1,15}$', [EXPECTED]: 'a numeric id' }),
})
export type TargetParams = { targetableType: string; targetableId?: string }

/** Bulk updates: only unread records change, so the values cannot be null here. */
export const MarkNotificationsBodySchema = Type.Object(
  {
    seen_at: Opt(TimestampInputSchema),
    read_at: Opt(TimestampInputSchema),
    filter: Opt(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
)
export type MarkNotificationsBody = Static<typeof MarkNotificationsBodySchema>

export const MarkTargetNotificationsBodySchema = Type.Object(
  {
    seen_at: Opt(TimestampInputSchema),
    read_at: Opt(TimestampInputSchema),
  },
  { additionalProperties: false },
)

/** One record: null marks it unseen / unread again. */
export const MarkNotificationBodySchema = Type.Object(
  {
    seen_at: Opt(Nullable(TimestampInputSchema)),
    read_at: Opt(Nullable(TimestampInputSchema)),
  },
  { additionalProperties: false },
)
export type MarkNotificationBody = Static<typeof MarkNotificationBodySchema>

/** 64 KiB of HTML; the byte limit is checked in the service (maxLength counts characters). */
export const MAX_BODY_BYTES = 64 * 1024

export const SendNotificationBodySchema = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 255 }),
    body: Type.String({ maxLength: MAX_BODY_BYTES }),
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    department_ids: Opt(Type.Array(IdSchema, { maxItems: 10_000 })),
    user_ids: Opt(Type.Array(IdSchema, { maxItems: 100_000 })),
  },
  { additionalProperties: false },
)
export type SendNotificationBody = Static<typeof SendNotificationBodySchema>
