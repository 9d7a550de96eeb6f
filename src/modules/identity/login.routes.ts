import type { App } from '../../platform/app-module.js'
import { errorResponses, NoContentSchema } from '../../platform/http/schemas.js'
import { LoginBodySchema, LoginResponseSchema, MfaRequiredProblemSchema } from './login.schemas.js'
import type { LoginService } from './login.service.js'

export async function loginRoutes(app: App, { auth }: { auth: LoginService }): Promise<void> {
  app.post(
    '/api/auth/login',
    {
      config: { public: true },
      schema: {
        tags: ['auth'],
        summary: 'Log in and obtain an access token',
        security: [],
        body: LoginBodySchema,
        response: { 200: LoginResponseSchema, ...errorResponses, 401: MfaRequiredProblemSchema },
      },
    },
    (request) => auth.login(request.body),
  )

  app.post(
    '/api/auth/logout',
    {
      config: { mfaEnrollment: true },
      schema: {
        tags: ['auth'],
        summary: 'Revoke the access token used',
        response: { 204: NoContentSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      await auth.logout(request.actor)
      return reply.code(204).send()
    },
  )
}
