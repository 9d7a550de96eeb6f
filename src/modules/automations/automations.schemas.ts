import { Type, type Static } from 'typebox'
import { IdSchema, Nullable, TimestampSchema, UuidSchema } from '../../platform/http/schemas.js'

const Opt = Type.Optional

/** A webhook config as returned: no password, header value or signing secret (allow-list). */
const RedactedConfigSchema = Type.Object({
  url: Opt(Type.String()),
  method: Opt(Nullable(Type.String())),
  headers: Opt(Type.Record(Type.String(), Type.String())),
  auth: Opt(
    Nullable(
      Type.Object({
        type: Opt(Nullable(Type.String())),
        basic: Opt(Type.Object({ username: Opt(Type.String()) })),
        header: Opt(Type.Object({ name: Opt(Type.String()) })),
        secret: Opt(Type.Object({})),
      }),
    ),
  ),
})

export const AutomationSchema = Type.Object(
  {
    id: Opt(Type.Integer()),
    name: Opt(Type.String()),
    event: Opt(Type.String()),
    active: Opt(Type.Boolean()),
    actions: Opt(Type.Array(Type.Object({ type: Type.String(), config: RedactedConfigSchema }))),
    user_id: Opt(Nullable(Type.Integer())),
    created_at: Opt(TimestampSchema),
    updated_at: Opt(TimestampSchema),
  },
  { $id: 'Automation' },
)

/** `config` is checked by the service (dotted paths per key, DNS resolution), not by the schema. */
export const ActionInputSchema = Type.Object(
  { type: Type.String({ maxLength: 100 }), config: Type.Unknown() },
  { additionalProperties: false },
)
export type ActionInput = Static<typeof ActionInputSchema>

/** Bounds the fan-out of one event. */
export const MAX_ACTIONS = 10

const fields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  event: Type.String({ minLength: 1, maxLength: 100 }),
  active: Type.Boolean(),
  actions: Type.Array(ActionInputSchema, { maxItems: MAX_ACTIONS }),
}

export const CreateAutomationBodySchema = Type.Object(
  { name: fields.name, event: fields.event, active: Opt(fields.active), actions: fields.actions },
  { additionalProperties: false },
)
export type CreateAutomationBody = Static<typeof CreateAutomationBodySchema>

export const UpdateAutomationBodySchema = Type.Object(
  { name: Opt(fields.name), event: Opt(fields.event), active: Opt(fields.active), actions: Opt(fields.actions) },
  { additionalProperties: false },
)
export type UpdateAutomationBody = Static<typeof UpdateAutomationBodySchema>

export const ValidateActionResponseSchema = Type.Object({ valid: Type.Literal(true) })
export const TestResponseSchema = Type.Object({ delivery_ids: Type.Array(Type.Integer()) })

export const DeliverySchema = Type.Object(
  {
    id: Opt(Type.Integer()),
    automation_id: Opt(Type.Integer()),
    event_id: Opt(UuidSchema),
    event_type: Opt(Type.String()),
    action_index: Opt(Type.Integer()),
    url: Opt(Type.String()),
    method: Opt(Type.String()),
    status: Opt(Type.String()),
    attempts: Opt(Type.Integer()),
    response_status: Opt(Nullable(Type.Integer())),
    response_time_ms: Opt(Nullable(Type.Integer())),
    response_body: Opt(Nullable(Type.String())),
    error: Opt(Nullable(Type.String())),
    next_attempt_at: Opt(Nullable(TimestampSchema)),
    created_at: Opt(TimestampSchema),
    updated_at: Opt(TimestampSchema),
  },
  { $id: 'WebhookDelivery' },
)

export const DeliveryParamsSchema = Type.Object({ id: IdSchema, delivery: IdSchema })
