import type { AppModule } from '../../platform/app-module.js'
import { entityPermissionsRoutes } from './entity-permissions.routes.js'
import { createEntityPermissionsService } from './entity-permissions.service.js'

// The public surface other modules use (folders now; shared items and content modules later).
export {
  contentTarget,
  lookupTarget,
  parseTargetId,
  type GrantTarget,
  type TargetId,
  type TargetIdType,
} from './targets.js'
export {
  syncEntityPermissions,
  planFreshGrants,
  deleteEntityPermissionsOnTargets,
  loadEntityPermissionsOfTargets,
  validateGrantElements,
} from './entity-permissions.sync.js'
export { mayManageGrants } from './entity-permissions.service.js'
export { freshGrantsWrite, type GrantColumns } from './entity-permissions.queries.js'
export { loadBasicUsers, entityPermissionResource } from './entity-permissions.resource.js'
export {
  EntityPermissionElementSchema,
  EntityPermissionElementsSchema,
  EntityPermissionSchema,
  GRANT_KEYS,
  type EntityPermissionElement,
  type EntityPermission,
} from './entity-permissions.schemas.js'

export const entityPermissionsModule: AppModule = {
  name: 'entity-permissions',
  routes: (app, deps) => entityPermissionsRoutes(app, { grants: createEntityPermissionsService(deps) }),
}
