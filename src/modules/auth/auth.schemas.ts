import { Type, type Static } from 'typebox'
import { TimestampSchema } from '../../platform/http/schemas.js'
import { UserSchema } from '../users/index.js'

export const LoginBodySchema = Type.Object(
  {
    tenant: Type.String({ minLength: 1, maxLength: 63 }),
    username: Type.String({ minLength: 1, maxLength: 255 }),
    password: Type.String({ minLength: 1, maxLength: 256 }),
    device_name: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
)
export type LoginBody = Static<typeof LoginBodySchema>

export const LoginResponseSchema = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_at: TimestampSchema,
  password_change_required: Type.Boolean(),
  user: UserSchema,
})
