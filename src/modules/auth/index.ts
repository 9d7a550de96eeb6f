import { sql } from 'kysely'
import type { AppModule } from '../../platform/app-module.js'
import { authRoutes } from './auth.routes.js'
import { createAuthService } from './auth.service.js'

export const authModule: AppModule = {
  name: 'auth',
  routes: (app, deps) => authRoutes(app, { auth: createAuthService(deps) }),
  jobs: ({ db }) => ({
    // keeps the brute-force table small: failures older than a day no longer matter
    'auth:prune_login_failures': async () => {
      await db
        .deleteFrom('login_failures')
        .where(sql<boolean>`attempted_at < now() - interval '1 day'`)
        .execute()
    },
  }),
  cron: ['17 3 * * * auth:prune_login_failures'],
}
