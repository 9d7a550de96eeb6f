import type { AppModule } from '../../platform/app-module.js'
import { IDENTITY_CRON, identityJobs } from './identity.jobs.js'
import { oidcSecrets, totpSecrets } from './identity.secrets.js'
import { loginRoutes } from './login.routes.js'
import { createLoginService } from './login.service.js'
import { oidcRoutes } from './oidc.routes.js'
import { createOidcSettingsService } from './oidc-settings.service.js'
import { createOidcService } from './oidc.service.js'
import { passwordResetRoutes } from './password-reset.routes.js'
import { createPasswordResetService } from './password-reset.service.js'
import { sessionsRoutes } from './sessions.routes.js'
import { createSessionsService } from './sessions.service.js'
import { totpRoutes } from './totp.routes.js'
import { createTotpService } from './totp.service.js'

export { passwordResetJob } from './identity.jobs.js'
export { PASSWORD_RESET_JOB } from './password-reset.service.js'
export type { PasswordResetPayload } from './password-reset.schemas.js'

/**
 * Signing in (issues 34, 39, 40): the login endpoint (password with its throttle, the SSO login code,
 * the second factor), sessions, password reset by email, TOTP two-factor, OpenID Connect single
 * sign-on per tenant. One folder a flow: `<flow>.{routes,service,queries,schemas}.ts`
 * (login, sessions, password-reset, totp, oidc); the steps they share in `sign-in.service.ts` and
 * `tickets.service.ts`; every job in `identity.jobs.ts`.
 */
export const identityModule: AppModule = {
  name: 'identity',
  routes: async (app, deps) => {
    await loginRoutes(app, { auth: createLoginService(deps) })
    await sessionsRoutes(app, { sessions: createSessionsService(deps) })
    await passwordResetRoutes(app, { resets: createPasswordResetService(deps) })
    await totpRoutes(app, { totp: createTotpService(deps) })
    await oidcRoutes(app, { oidc: createOidcService(deps), settings: createOidcSettingsService(deps) })
  },
  jobs: identityJobs,
  cron: IDENTITY_CRON,
  secretHolders: [oidcSecrets, totpSecrets],
}
