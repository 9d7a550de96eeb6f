import type { AppDeps, AppModule } from '../../platform/app-module.js'
import { createFileStorage } from '../../platform/storage/file-storage.js'
import { createProfilePictures } from './users-pictures.js'
import { createUsersImportService } from './users-import.service.js'
import { createUsersLifecycleService } from './users-lifecycle.service.js'
import { DERIVE_ACTIVE_CRON, usersJobs } from './users.jobs.js'
import { createDataExports, DATA_EXPORT_SWEEP_CRON } from './users-data-export.js'
import { dataExportRoutes } from './users-data-export.routes.js'
import { usersRoutes } from './users.routes.js'
import { createUsersService } from './users.service.js'
import { userSyncSource } from './users.sync.js'
import { usersQuota } from './users.queries.js'

export { insertUser, findPresentedUser, departmentsOfUsers, usersQuota } from './users.queries.js'
export { userResource } from './users.resource.js'
export { UserSchema, BASIC_USER_FIELDS } from './users.schemas.js'
export { deriveActiveForAllTenants } from './users.jobs.js'

export type { UsersService, ProvisionedUserBody, ProvisionedUserUpdate } from './users.service.js'
export type { UsersLifecycleService } from './users-lifecycle.service.js'
export { USERNAME_PATTERN } from './users.schemas.js'

/** The users and lifecycle services as the users routes use them (SCIM provisioning goes through the same). */
export function createUserServices(deps: AppDeps) {
  const storage = createFileStorage(deps.config.storageDir)
  const pictures = createProfilePictures(storage)
  return {
    users: createUsersService(deps, pictures),
    lifecycle: createUsersLifecycleService(deps, pictures, createDataExports(deps, storage)),
  }
}

export const usersModule: AppModule = {
  name: 'users',
  routes: async (app, deps) => {
    const storage = createFileStorage(deps.config.storageDir)
    const pictures = createProfilePictures(storage)
    const exports = createDataExports(deps, storage)
    await usersRoutes(app, {
      users: createUsersService(deps, pictures),
      lifecycle: createUsersLifecycleService(deps, pictures, exports),
      imports: createUsersImportService(deps, storage),
      storageDir: deps.config.storageDir,
    })
    await dataExportRoutes(app, { exports })
  },
  jobs: usersJobs,
  cron: [DERIVE_ACTIVE_CRON, DATA_EXPORT_SWEEP_CRON],
  syncSources: [userSyncSource],
  quotaCounters: [usersQuota],
}
