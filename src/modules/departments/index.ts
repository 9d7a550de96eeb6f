import type { AppModule } from '../../platform/app-module.js'
import { departmentsRoutes } from './departments.routes.js'
import { createDepartmentsService } from './departments.service.js'

export const departmentsModule: AppModule = {
  name: 'departments',
  routes: (app, deps) => departmentsRoutes(app, { departments: createDepartmentsService(deps) }),
}

export { createDepartmentsService } from './departments.service.js'
export type { DepartmentsService, DepartmentExtras } from './departments.service.js'
