import type { App } from '../../platform/app-module.js'
import { errorResponses, NoContentSchema } from '../../platform/http/schemas.js'
import {
  PasswordResetAcceptedSchema,
  PasswordResetBodySchema,
  PasswordResetConfirmBodySchema,
} from './password-reset.schemas.js'
import type { PasswordResetService } from './password-reset.service.js'

export async function passwordResetRoutes(app: App, { resets }: { resets: PasswordResetService }): Promise<void> {
  const tags = ['auth']
  app.post(
    '/api/auth/password-reset',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Ask for a password reset link by email (always 202, whether or not the account exists)',
        security: [],
        body: PasswordResetBodySchema,
        response: { 202: PasswordResetAcceptedSchema, ...errorResponses },
      },
    },
    async (request, reply) => reply.code(202).send(await resets.request(request.body)),
  )

  app.post(
    '/api/auth/password-reset/confirm',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Set a new password with the token of a reset link; ends every session of the user',
        security: [],
        body: PasswordResetConfirmBodySchema,
        response: { 204: NoContentSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      await resets.confirm(request.body)
      return reply.code(204).send()
    },
  )
}
