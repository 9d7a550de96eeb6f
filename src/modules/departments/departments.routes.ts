import type { App } from '../../platform/app-module.js'
import { actorHandlers, registerResourceRoutes } from '../../platform/http/resource-routes.js'
import { CreateDepartmentBodySchema, DepartmentSchema, UpdateDepartmentBodySchema } from './departments.schemas.js'
import { departmentResource } from './departments.resource.js'
import type { DepartmentsService } from './departments.service.js'

export async function departmentsRoutes(app: App, { departments }: { departments: DepartmentsService }): Promise<void> {
  registerResourceRoutes(app, {
    collection: '/api/departments',
    item: '/api/departments/:id',
    tag: 'departments',
    itemSchema: DepartmentSchema,
    resource: departmentResource,
    bodies: { create: CreateDepartmentBodySchema, update: UpdateDepartmentBodySchema },
    handlers: actorHandlers<typeof CreateDepartmentBodySchema, typeof UpdateDepartmentBodySchema>({
      list: departments.listDepartments,
      show: (actor, id, query) => departments.getDepartment(actor, id, query),
      create: departments.createDepartment,
      update: departments.updateDepartment,
      remove: departments.deleteDepartment,
    }),
  })
}
