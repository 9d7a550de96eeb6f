import { Type, type Static } from 'typebox'
import { IdSchema, Nullable, TimestampSchema } from '../../platform/http/schemas.js'

export const SessionSchema = Type.Object(
  {
    id: Type.Integer({ description: 'the access token id' }),
    created_at: TimestampSchema,
    expires_at: TimestampSchema,
    last_used_at: Type.Union([TimestampSchema, Type.Null()], {
      description: 'written at most once a minute per token (and up to a few seconds late)',
    }),
    device_name: Nullable(Type.String()),
    user_agent: Nullable(Type.String()),
    ip: Nullable(Type.String()),
    current: Type.Boolean({ description: 'the token of this request' }),
  },
  { $id: 'Session' },
)
export type Session = Static<typeof SessionSchema>
export const SessionListSchema = Type.Array(SessionSchema)
export const SessionParamsSchema = Type.Object({ sid: IdSchema })
export const UserSessionParamsSchema = Type.Object({ id: IdSchema, sid: IdSchema })
export const SessionUserParamsSchema = Type.Object({ id: IdSchema })
