import { Type, type Static } from 'typebox'
import { IdSchema } from '../../platform/http/schemas.js'

const CodeSchema = Type.String({ pattern: '^[0-9]{6}$', description: 'a 6-digit TOTP code' })

export const TotpEnrollmentSchema = Type.Object({
  secret: Type.String({ description: 'base32; shown once, for authenticator apps that cannot scan the URL' }),
  otpauth_url: Type.String({ description: '`otpauth://totp/…` (RFC 6238; SHA-1, 6 digits, 30 s): show as a QR code' }),
})
export type TotpEnrollment = Static<typeof TotpEnrollmentSchema>

export const TotpEnrollBodySchema = Type.Object(
  {
    password: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description:
          'your current password (required unless the account has none: then a sign-in of the last ten minutes)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type TotpEnrollBody = Static<typeof TotpEnrollBodySchema>

export const TotpCodeBodySchema = Type.Object({ code: CodeSchema }, { additionalProperties: false })
export type TotpCodeBody = Static<typeof TotpCodeBodySchema>

export const TotpDisableBodySchema = Type.Object(
  {
    code: Type.Optional(CodeSchema),
    recovery_code: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
  },
  { additionalProperties: false, description: 'a current TOTP code or one of the recovery codes' },
)
export type TotpDisableBody = Static<typeof TotpDisableBodySchema>

export const RecoveryCodesSchema = Type.Object({
  recovery_codes: Type.Array(Type.String(), { description: 'shown once; each works once instead of a TOTP code' }),
})
export type RecoveryCodes = Static<typeof RecoveryCodesSchema>

export const TotpUserParamsSchema = Type.Object({ id: IdSchema })
