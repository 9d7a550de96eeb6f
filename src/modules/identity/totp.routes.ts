import type { App } from '../../platform/app-module.js'
import { errorResponses, NoContentSchema } from '../../platform/http/schemas.js'
import {
  RecoveryCodesSchema,
  TotpCodeBodySchema,
  TotpDisableBodySchema,
  TotpEnrollBodySchema,
  TotpEnrollmentSchema,
  TotpUserParamsSchema,
} from './totp.schemas.js'
import type { TotpService } from './totp.service.js'

export async function totpRoutes(app: App, { totp }: { totp: TotpService }): Promise<void> {
  const tags = ['two-factor']
  app.post(
    '/api/users/current/totp',
    {
      config: { mfaEnrollment: true },
      schema: {
        tags,
        summary: 'Start TOTP enrollment (with your current password): a new secret, pending until confirmed',
        body: TotpEnrollBodySchema,
        response: { 200: TotpEnrollmentSchema, ...errorResponses },
      },
    },
    // a POST without a body enrolls an account without a password
    (request) => totp.enroll(request.actor, request.body ?? {}),
  )

  app.post(
    '/api/users/current/totp/confirm',
    {
      config: { mfaEnrollment: true },
      schema: {
        tags,
        summary: 'Confirm TOTP with a code from the app: enables it and answers 10 recovery codes (once)',
        body: TotpCodeBodySchema,
        response: { 200: RecoveryCodesSchema, ...errorResponses },
      },
    },
    (request) => totp.confirm(request.actor, request.body),
  )

  app.delete(
    '/api/users/current/totp',
    {
      schema: {
        tags,
        summary: 'Turn your TOTP off (with a current code or a recovery code)',
        body: TotpDisableBodySchema,
        response: { 204: NoContentSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      await totp.disable(request.actor, request.body)
      return reply.code(204).send()
    },
  )

  app.delete(
    '/api/users/:id/totp',
    {
      schema: {
        tags,
        summary: "Remove a user's TOTP factor (permission users.administrate; audited)",
        params: TotpUserParamsSchema,
        response: { 204: NoContentSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      await totp.reset(request.actor, request.params.id)
      return reply.code(204).send()
    },
  )
}
