import type { AppModule } from '../../platform/app-module.js'
import { rolesRoutes } from './roles.routes.js'
import { createRolesService } from './roles.service.js'

export { CONTENT_MODULES, DEFAULT_ROLES, isKnownPermission, PERMISSION_GRANTS, PERMISSIONS } from './permissions.js'

export const rolesModule: AppModule = {
  name: 'roles',
  routes: (app, deps) => rolesRoutes(app, { roles: createRolesService(deps) }),
}
