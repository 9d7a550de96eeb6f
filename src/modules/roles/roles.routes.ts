import type { FastifyInstance } from 'fastify'
import { registerCrudRoutes } from '../../platform/http/crud-routes.js'
import { CreateRoleBodySchema, RoleSchema, UpdateRoleBodySchema } from './roles.schemas.js'
import { roleResource } from './roles.resource.js'
import type { RolesService } from './roles.service.js'

export async function rolesRoutes(app: FastifyInstance, { roles }: { roles: RolesService }): Promise<void> {
  registerCrudRoutes(app, {
    path: '/api/roles', tag: 'roles', itemSchema: RoleSchema, resource: roleResource,
    createBodySchema: CreateRoleBodySchema, updateBodySchema: UpdateRoleBodySchema,
    handlers: { list: roles.listRoles, show: roles.getRole, create: roles.createRole, update: roles.updateRole, remove: roles.deleteRole },
  })
}
