import type { AppModule } from '../platform/app-module.js'
import { identityModule } from './identity/index.js'
import { auditModule } from './audit/index.js'
import { accessModule } from './access/index.js'
import { automationsModule } from './automations/index.js'
import { departmentsModule } from './departments/index.js'
import { entityPermissionsModule } from './entity-permissions/index.js'
import { foldersModule } from './folders/index.js'
import { languagesModule } from './languages/index.js'
import { notificationsModule } from './notifications/index.js'
import { rolesModule } from './roles/index.js'
import { sharedItemsModule } from './shared-items/index.js'
import { usersModule } from './users/index.js'
import { calendarModule } from './calendar/index.js'
import { filemanagerModule } from './filemanager/index.js'
import { formsModule } from './forms/index.js'
import { infoboardModule } from './infoboard/index.js'
import { manualsModule } from './manuals/index.js'
import { tasksModule } from './tasks/index.js'
import { scimModule } from './scim/index.js'
import { retentionModule } from './retention/index.js'
import { backupsModule } from './backups/index.js'
import { limitsModule } from './limits/index.js'
import { syncModule } from './sync/index.js'

/** Every domain module, in registration order. The composition root (app.ts, worker) reads this list. */
export const appModules: AppModule[] = [
  identityModule,
  usersModule,
  rolesModule,
  departmentsModule,
  languagesModule,
  automationsModule,
  entityPermissionsModule,
  foldersModule,
  notificationsModule,
  calendarModule,
  filemanagerModule,
  formsModule,
  infoboardModule,
  manualsModule,
  tasksModule,
  sharedItemsModule,
  auditModule,
  accessModule,
  scimModule,
  retentionModule,
  backupsModule,
  limitsModule,
  syncModule,
]
