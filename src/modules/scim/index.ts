import type { AppModule } from '../../platform/app-module.js'
import { createScimTokensService } from './scim-tokens.service.js'
import { scimTokensRoutes } from './scim-tokens.routes.js'
import { scimRoutes } from './scim.routes.js'

export { createScimToken } from './scim-tokens.service.js'

/** SCIM 2.0 provisioning (docs/scim.md): the service provider at /scim/v2 and its tokens. */
export const scimModule: AppModule = {
  name: 'scim',
  routes: async (app, deps) => {
    await scimTokensRoutes(app, { tokens: createScimTokensService(deps.db) })
    await scimRoutes(app, deps)
  },
}
