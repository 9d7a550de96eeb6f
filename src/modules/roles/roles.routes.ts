import type { App } from '../../platform/app-module.js'
import { actorHandlers, registerResourceRoutes } from '../../platform/http/resource-routes.js'
import { CreateRoleBodySchema, RoleSchema, UpdateRoleBodySchema } from './roles.schemas.js'
import { roleResource } from './roles.resource.js'
import type { RolesService } from './roles.service.js'

export async function rolesRoutes(app: App, { roles }: { roles: RolesService }): Promise<void> {
  registerResourceRoutes(app, {
    collection: '/api/roles',
    item: '/api/roles/:id',
    tag: 'roles',
    itemSchema: RoleSchema,
    resource: roleResource,
    bodies: { create: CreateRoleBodySchema, update: UpdateRoleBodySchema },
    handlers: actorHandlers<typeof CreateRoleBodySchema, typeof UpdateRoleBodySchema>({
      list: roles.listRoles,
      show: roles.getRole,
      create: roles.createRole,
      update: roles.updateRole,
      remove: roles.deleteRole,
    }),
  })
}
