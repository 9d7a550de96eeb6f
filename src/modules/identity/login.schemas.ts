import { Type, type Static } from 'typebox'
import { ProblemSchema, TimestampSchema } from '../../platform/http/schemas.js'
import { UserSchema } from '../users/index.js'

const DeviceName = Type.Optional(Type.String({ maxLength: 255 }))

export const PasswordLoginBodySchema = Type.Object(
  {
    tenant: Type.String({ minLength: 1, maxLength: 63 }),
    username: Type.String({ minLength: 1, maxLength: 255 }),
    password: Type.String({ minLength: 1, maxLength: 256 }),
    device_name: DeviceName,
  },
  { additionalProperties: false, title: 'Password sign-in' },
)
export type PasswordLoginBody = Static<typeof PasswordLoginBodySchema>

export const LoginCodeBodySchema = Type.Object(
  {
    login_code: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'from the SSO callback redirect (60 s, one use)',
    }),
    device_name: DeviceName,
  },
  { additionalProperties: false, title: 'Single sign-on login code' },
)

export const MfaLoginBodySchema = Type.Object(
  {
    mfa_token: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'from the 401 `mfa_required` problem (5 minutes)',
    }),
    totp: Type.Optional(Type.String({ pattern: '^[0-9]{6}$', description: 'the current 6-digit TOTP code' })),
    recovery_code: Type.Optional(
      Type.String({ minLength: 1, maxLength: 40, description: 'one of the recovery codes' }),
    ),
  },
  { additionalProperties: false, title: 'Second factor' },
)
export type MfaLoginBody = Static<typeof MfaLoginBodySchema>

export const LoginBodySchema = Type.Union([PasswordLoginBodySchema, LoginCodeBodySchema, MfaLoginBodySchema], {
  description:
    'tenant + username + password; or a `login_code` from single sign-on; or an `mfa_token` with `totp` or `recovery_code`',
})
export type LoginBody = Static<typeof LoginBodySchema>

export const LoginResponseSchema = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_at: TimestampSchema,
  password_change_required: Type.Boolean(),
  mfa_enrollment_required: Type.Optional(
    Type.Boolean({
      description: 'the role requires TOTP: this token may only enroll it (`POST /api/users/current/totp`)',
    }),
  ),
  user: UserSchema,
})

export const MfaRequiredProblemSchema = Type.Object(
  {
    ...ProblemSchema.properties,
    mfa_token: Type.Optional(Type.String({ description: 'with `code: "mfa_required"`: complete the sign-in with it' })),
  },
  { description: 'RFC 9457 problem details; `mfa_required` carries an `mfa_token`' },
)
