import { Type, type Static } from 'typebox'
import { EXPECTED } from '../../platform/http/schemas.js'

export const SyncQuerySchema = Type.Object({
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
  device: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9._-]{1,100}$',
      [EXPECTED]: '1 to 100 letters, digits, dots, dashes or underscores',
    }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000 })),
  wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 60 })),
})
export type SyncQuery = Static<typeof SyncQuerySchema>

const Entity = Type.String({ description: 'notification | folder | infoboardPost | manualEntry' })

export const SyncUpsertSchema = Type.Object({
  op: Type.Literal('upsert'),
  entity: Entity,
  id: Type.Union([Type.Integer(), Type.String()]),
  version: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown(), {
    description: "exactly what the entity's own GET answers this user (default fields and relations)",
  }),
})
export const SyncRemoveSchema = Type.Object({
  op: Type.Literal('remove'),
  entity: Entity,
  id: Type.Union([Type.Integer(), Type.String()]),
  reason: Type.Union([Type.Literal('deleted'), Type.Literal('access_lost')]),
})
export const SyncAnswerSchema = Type.Object({
  changes: Type.Array(Type.Union([SyncUpsertSchema, SyncRemoveSchema])),
  cursor: Type.String({ description: 'opaque; send it as `cursor` on the next sync of this device' }),
  has_more: Type.Boolean({ description: 'true: sync again at once with the new cursor for the rest' }),
})
