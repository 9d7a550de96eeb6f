import type { FastifyInstance } from 'fastify'
import { registerCrudRoutes } from '../../platform/http/crud-routes.js'
import { CreateDepartmentBodySchema, DepartmentSchema, UpdateDepartmentBodySchema } from './departments.schemas.js'
import { departmentResource } from './departments.resource.js'
import type { DepartmentsService } from './departments.service.js'

export async function departmentsRoutes(app: FastifyInstance, { departments }: { departments: DepartmentsService }): Promise<void> {
  registerCrudRoutes(app, {
    path: '/api/departments', tag: 'departments', itemSchema: DepartmentSchema, resource: departmentResource,
    createBodySchema: CreateDepartmentBodySchema, updateBodySchema: UpdateDepartmentBodySchema,
    handlers: {
      list: departments.listDepartments, show: (actor, id, query) => departments.getDepartment(actor, id, query),
      create: departments.createDepartment, update: departments.updateDepartment, remove: departments.deleteDepartment,
    },
  })
}
