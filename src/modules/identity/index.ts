import { sql } from 'kysely'
import type { AppModule } from '../../platform/app-module.js'
import { createMailer } from '../notifications/index.js'
import { createOidcService, oidcRoutes, oidcSecrets } from './oidc.js'
import {
  createPasswordResetService,
  PASSWORD_RESET_JOB,
  passwordResetJob,
  passwordResetRoutes,
  type PasswordResetPayload,
} from './password-reset.js'
import { createSessionsService, sessionsRoutes } from './sessions.js'
import { createTotpService, totpRoutes, totpSecrets } from './totp.js'

export { completeSignIn, recordFailedSignIn, secondFactorGate, signInEligibleUser } from './sign-in.js'
export { completeMfaSignIn } from './totp.js'
export { exchangeLoginCode, passwordLoginAllowed } from './oidc.js'
export { PASSWORD_RESET_JOB, passwordResetJob, type PasswordResetPayload } from './password-reset.js'

const isResetPayload = (payload: unknown): payload is PasswordResetPayload =>
  typeof payload === 'object' &&
  payload !== null &&
  'tenantId' in payload &&
  typeof payload.tenantId === 'number' &&
  'login' in payload &&
  typeof payload.login === 'string'

/**
 * Enterprise sign-in (issue 34): sessions, password reset by email, TOTP two-factor, OpenID Connect
 * single sign-on per tenant. The login endpoint itself stays in the auth module and calls in here.
 */
export const identityModule: AppModule = {
  name: 'identity',
  routes: async (app, deps) => {
    await sessionsRoutes(app, { sessions: createSessionsService(deps) })
    await passwordResetRoutes(app, { resets: createPasswordResetService(deps) })
    await totpRoutes(app, { totp: createTotpService(deps) })
    await oidcRoutes(app, { oidc: createOidcService(deps) })
  },
  jobs: ({ db, config, log }) => {
    const mailer = createMailer({ smtpUrl: config.smtpUrl, appUrl: config.appUrl, log })
    const reset = passwordResetJob({ db, appUrl: config.appUrl, mailer, log })
    return {
      [PASSWORD_RESET_JOB]: async (payload) => {
        if (!isResetPayload(payload)) throw new Error(`${PASSWORD_RESET_JOB}: malformed payload`)
        await reset(payload)
      },
      // used and expired tickets, old reset requests, activity rows of ended tokens
      'identity:prune': async () => {
        await db
          .deleteFrom('auth_tickets')
          .where(sql<boolean>`expires_at < now() - interval '1 day'`)
          .execute()
        await db
          .deleteFrom('password_reset_requests')
          .where(sql<boolean>`created_at < now() - interval '1 day'`)
          .execute()
        await sql`delete from session_activity s where not exists (
            select 1 from access_tokens t where t.tenant_id = s.tenant_id and t.id = s.token_id
              and t.revoked_at is null and t.expires_at > now())`.execute(db)
      },
    }
  },
  cron: ['23 3 * * * identity:prune'],
  secretHolders: [oidcSecrets, totpSecrets],
}
