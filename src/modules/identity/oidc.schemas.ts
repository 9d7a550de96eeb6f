import { Type, type Static } from 'typebox'
import { IdSchema, Nullable, TimestampSchema } from '../../platform/http/schemas.js'

const Domain = Type.String({
  pattern: '^[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$',
  maxLength: 253,
  description: 'e.g. example.com',
})
export const OidcSettingsBodySchema = Type.Object(
  {
    issuer: Type.String({ format: 'uri', maxLength: 500, description: 'the issuer identifier (discovery base)' }),
    client_id: Type.String({ minLength: 1, maxLength: 255 }),
    client_secret: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1000, description: 'write-only; required when none is stored yet' }),
    ),
    scopes: Type.Optional(Type.String({ minLength: 1, maxLength: 500, default: 'openid profile email' })),
    username_claim: Type.Optional(Type.String({ minLength: 1, maxLength: 100, default: 'preferred_username' })),
    email_claim: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100, default: 'email' }))),
    provisioning: Type.Optional(
      Type.Union([Type.Literal('off'), Type.Literal('create')], {
        default: 'off',
        description: '`create`: a first sign-in of an unknown user creates them (default role, allowed email domains)',
      }),
    ),
    default_role_id: Type.Optional(Nullable(IdSchema)),
    allowed_email_domains: Type.Optional(Type.Array(Domain, { maxItems: 100 })),
    password_login: Type.Optional(
      Type.Boolean({
        default: true,
        description: '`false`: password sign-in only for users whose role holds `*` (break-glass)',
      }),
    ),
    link_by_verified_email: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          '`true`: a first sign-in links the one local account with the same email when the ID token says `email_verified: true` (only for a provider that verifies emails)',
      }),
    ),
    mfa_amr_values: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        maxItems: 50,
        description:
          '`amr` values of the ID token that count as multi-factor authentication at the provider (default mfa, otp, hwk, swk, fido, sc)',
      }),
    ),
    mfa_acr_values: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
        maxItems: 50,
        description: '`acr` values that count as multi-factor authentication (default none)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type OidcSettingsBody = Static<typeof OidcSettingsBodySchema>

export const OidcSettingsSchema = Type.Object(
  {
    issuer: Type.String(),
    client_id: Type.String(),
    client_secret_set: Type.Boolean({ description: 'the secret itself is never answered' }),
    scopes: Type.String(),
    username_claim: Type.String(),
    email_claim: Nullable(Type.String()),
    provisioning: Type.Union([Type.Literal('off'), Type.Literal('create')]),
    default_role_id: Nullable(Type.Integer()),
    allowed_email_domains: Type.Array(Type.String()),
    password_login: Type.Boolean(),
    link_by_verified_email: Type.Boolean(),
    mfa_amr_values: Type.Array(Type.String()),
    mfa_acr_values: Type.Array(Type.String()),
    redirect_uri: Type.String({ description: 'register this redirect URI at the provider' }),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
  },
  { $id: 'OidcSettings' },
)
export type OidcSettings = Static<typeof OidcSettingsSchema>

export const StartParamsSchema = Type.Object({ tenant: Type.String({ minLength: 1, maxLength: 63 }) })
export const StartQuerySchema = Type.Object({
  redirect_uri: Type.String({
    minLength: 1,
    maxLength: 2000,
    description: 'where the app receives `#login_code=…`: a URL under APP_URL',
  }),
})
export const CallbackQuerySchema = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 4000 })),
  state: Type.Optional(Type.String({ maxLength: 200 })),
  iss: Type.Optional(Type.String({ maxLength: 500 })),
  session_state: Type.Optional(Type.String({ maxLength: 500 })),
  scope: Type.Optional(Type.String({ maxLength: 2000 })),
  authuser: Type.Optional(Type.String({ maxLength: 50 })),
  prompt: Type.Optional(Type.String({ maxLength: 100 })),
  hd: Type.Optional(Type.String({ maxLength: 253 })),
  error: Type.Optional(Type.String({ maxLength: 200 })),
  error_description: Type.Optional(Type.String({ maxLength: 2000 })),
  error_uri: Type.Optional(Type.String({ maxLength: 2000 })),
})
export type CallbackQuery = Static<typeof CallbackQuerySchema>
export const LinkBodySchema = Type.Object(
  {
    password: Type.String({ minLength: 1, maxLength: 256, description: 'your current password' }),
    totp: Type.Optional(Type.String({ pattern: '^[0-9]{6}$', description: 'a current TOTP code (when TOTP is on)' })),
    redirect_uri: Type.String({ minLength: 1, maxLength: 2000, description: 'a URL under APP_URL' }),
  },
  { additionalProperties: false },
)
export type LinkBody = Static<typeof LinkBodySchema>
export const LinkAnswerSchema = Type.Object({
  authorization_url: Type.String({ description: 'send the browser here; the identity signed in with is linked' }),
})
export const AdminLinkBodySchema = Type.Object(
  { subject: Type.String({ minLength: 1, maxLength: 255, description: "the provider's `sub` of the person" }) },
  { additionalProperties: false },
)
export type AdminLinkBody = Static<typeof AdminLinkBodySchema>
export const OidcUserParamsSchema = Type.Object({ id: IdSchema })
export const RedirectSchema = Type.Null({ description: 'a redirect (Location header)' })
