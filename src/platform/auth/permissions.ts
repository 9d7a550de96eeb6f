import type { Actor } from './actor.js'

export const CONTENT_MODULES = [
  'calendar', 'filemanager', 'forms', 'infoboard', 'manuals', 'tasks', 'reports',
  'reportDefinitions', 'surveys', 'taskAssignments', 'taskTemplates',
] as const

/** Every permission string a role may hold (contract 00 §5); `*` means all. */
export const PERMISSIONS: readonly string[] = [
  '*',
  'users.view', 'users.viewDetails', 'users.create', 'users.update', 'users.delete', 'users.administrate',
  'roles.view', 'roles.manage', 'departments.view', 'departments.manage',
  'sharedItems.administrate', 'sharedItems.administrateAll',
  'entityPermissions.manage',
  'notifications.send', 'notifications.reset',
  'automations.manage',
  'audit.view',
  ...CONTENT_MODULES.flatMap((m) => [`${m}.view`, `${m}.manage`]),
]

const KNOWN = new Set(PERMISSIONS)
export const isKnownPermission = (permission: string) => KNOWN.has(permission)

export const DEFAULT_ROLES = [
  { name: 'Administrator', permissions: ['*'] },
  {
    name: 'Employee',
    permissions: ['users.view', 'departments.view', 'calendar.view', 'filemanager.view', 'forms.view', 'infoboard.view', 'manuals.view', 'tasks.view'],
  },
] as const

/** Whether the actor's role grants `permission` (a role holding `*` has every permission). */
export function can(actor: Pick<Actor, 'permissions'>, permission: string): boolean {
  return actor.permissions.has('*') || actor.permissions.has(permission)
}
