import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { errorResponses } from '../../platform/http/schemas.js'
import { LoginBodySchema, LoginResponseSchema, MfaRequiredProblemSchema, type LoginBody } from './auth.schemas.js'
import type { AuthService } from './auth.service.js'

export async function authRoutes(app: FastifyInstance, { auth }: { auth: AuthService }): Promise<void> {
  app.post<{ Body: LoginBody }>(
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
        response: { 204: Type.Null(), ...errorResponses },
      },
    },
    async (request, reply) => {
      await auth.logout(request.actor)
      return reply.code(204).send()
    },
  )
}
