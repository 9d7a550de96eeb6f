import { Type, type Static } from 'typebox'

export const PasswordResetBodySchema = Type.Object(
  {
    tenant: Type.String({ minLength: 1, maxLength: 63 }),
    login: Type.String({ minLength: 1, maxLength: 255, description: 'username or email address' }),
  },
  { additionalProperties: false },
)
export type PasswordResetBody = Static<typeof PasswordResetBodySchema>

export const PasswordResetAcceptedSchema = Type.Object({
  status: Type.Literal('accepted'),
  message: Type.String(),
})
export type PasswordResetAccepted = Static<typeof PasswordResetAcceptedSchema>

export const PasswordResetConfirmBodySchema = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 100 }),
    password: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'min length: tenant setting `password_min_length` (default 8)',
    }),
  },
  { additionalProperties: false },
)
export type PasswordResetConfirmBody = Static<typeof PasswordResetConfirmBodySchema>

/** The job's payload: what was asked for, looked up only in the job. */
export interface PasswordResetPayload {
  tenantId: number
  login: string
}
