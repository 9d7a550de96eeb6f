import type { App } from '../../platform/app-module.js'
import { errorResponses, NoContentSchema } from '../../platform/http/schemas.js'
import { CALLBACK_PATH, SPENT_BROWSER_COOKIE } from './oidc-browser.js'
import type { OidcSettingsService } from './oidc-settings.service.js'
import {
  AdminLinkBodySchema,
  CallbackQuerySchema,
  LinkAnswerSchema,
  LinkBodySchema,
  OidcSettingsBodySchema,
  OidcSettingsSchema,
  OidcUserParamsSchema,
  RedirectSchema,
  StartParamsSchema,
  StartQuerySchema,
} from './oidc.schemas.js'
import type { OidcService } from './oidc.service.js'

export async function oidcRoutes(
  app: App,
  { oidc, settings }: { oidc: OidcService; settings: OidcSettingsService },
): Promise<void> {
  const admin = ['administration']
  app.get(
    '/api/administration/oidc',
    {
      schema: {
        tags: admin,
        summary: "The tenant's OpenID Connect provider (permission tenant.administrate)",
        response: { 200: OidcSettingsSchema, ...errorResponses },
      },
    },
    (request) => settings.getSettings(request.actor),
  )
  app.put(
    '/api/administration/oidc',
    {
      schema: {
        tags: admin,
        summary: "Set the tenant's OpenID Connect provider (its discovery document is fetched; 422 when it cannot be)",
        body: OidcSettingsBodySchema,
        response: { 200: OidcSettingsSchema, ...errorResponses },
      },
    },
    (request) => settings.putSettings(request.actor, request.body),
  )
  app.delete(
    '/api/administration/oidc',
    {
      schema: {
        tags: admin,
        summary: "Remove the tenant's OpenID Connect provider",
        response: { 204: NoContentSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      await settings.deleteSettings(request.actor)
      return reply.code(204).send()
    },
  )

  app.post(
    '/api/users/current/oidc-link',
    {
      schema: {
        tags: ['auth'],
        summary:
          "Link an identity of the tenant's provider to your account: proves password (and TOTP), answers the provider's URL",
        body: LinkBodySchema,
        response: { 200: LinkAnswerSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { url, cookie } = await oidc.startLink(request.actor, request.body)
      return reply.header('set-cookie', cookie).send({ authorization_url: url })
    },
  )
  app.put(
    '/api/users/:id/oidc-identity',
    {
      schema: {
        tags: ['administration'],
        summary:
          "Link an identity (the provider's `sub`) to a user (users.administrate, and every permission the user holds)",
        params: OidcUserParamsSchema,
        body: AdminLinkBodySchema,
        response: { 204: NoContentSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      await oidc.adminLink(request.actor, request.params.id, request.body)
      return reply.code(204).send()
    },
  )

  app.get(
    '/api/auth/oidc/:tenant/start',
    {
      config: { public: true },
      schema: {
        tags: ['auth'],
        summary: "Start single sign-on: 302 to the tenant's identity provider",
        security: [],
        params: StartParamsSchema,
        querystring: StartQuerySchema,
        response: { 302: RedirectSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { url, cookie } = await oidc.start(request.params.tenant, request.query.redirect_uri)
      return reply.header('set-cookie', cookie).header('cache-control', 'no-store').redirect(url, 302)
    },
  )

  app.get(
    CALLBACK_PATH,
    {
      config: { public: true },
      schema: {
        tags: ['auth'],
        summary:
          'The identity provider redirects here; checks the browser cookie of /start, 302 to the app with `#login_code=…` (60 s, one use)',
        security: [],
        querystring: CallbackQuerySchema,
        response: { 302: RedirectSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const location = await oidc.callback(request.query, request.headers.cookie)
      // the binding is spent: the cookie goes
      return reply
        .header('set-cookie', SPENT_BROWSER_COOKIE)
        .header('cache-control', 'no-store')
        .redirect(location, 302)
    },
  )
}
