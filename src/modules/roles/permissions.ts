// The permission list (contract 00 §5): what a role may hold, what each grants, the default roles of a
// new tenant. The roles module owns it (it validates roles against it); platform/auth only asks `can`.

export const CONTENT_MODULES = [
  'calendar',
  'filemanager',
  'forms',
  'infoboard',
  'manuals',
  'tasks',
  'reports',
  'reportDefinitions',
  'surveys',
  'taskAssignments',
  'taskTemplates',
] as const

/** Every permission string a role may hold (contract 00 §5); `*` means all. */
export const PERMISSIONS: readonly string[] = [
  '*',
  'users.view',
  'users.viewDetails',
  'users.create',
  'users.update',
  'users.delete',
  'users.administrate',
  'users.export',
  'roles.view',
  'roles.manage',
  'departments.view',
  'departments.manage',
  'sharedItems.administrate',
  'sharedItems.administrateAll',
  'entityPermissions.manage',
  'notifications.send',
  'notifications.reset',
  'automations.manage',
  'audit.view',
  'tenant.administrate',
  ...CONTENT_MODULES.flatMap((m) => [`${m}.view`, `${m}.manage`]),
  'infoboard.reach',
  'manuals.reach',
]

/** What each permission grants, in words (docs/permissions.md is generated from this and DEFAULT_ROLES). */
export const PERMISSION_GRANTS: Readonly<Record<string, string>> = {
  '*': "every permission; also bypasses restriction grants everywhere (the tenant's administrators)",
  'users.view': 'list users, see basic fields of others, see profile pictures',
  'users.viewDetails': 'the extended fields of other users on single show',
  'users.create': 'create users',
  'users.update': 'update other users',
  'users.delete': 'soft-delete other users',
  'users.administrate':
    "change another user's password without `old_password`, change `prevent_logout`, log out other users, list deleted users, restore, black out, CSV import parse, import template",
  'users.export':
    "request another user's personal-data export (GDPR Art. 15/20) and see its status (`POST /api/users/{id}/data-export`)",
  'roles.view': 'list and show roles; view folders of type `role`',
  'roles.manage': 'create, update and delete roles; manage folders of type `role`',
  'departments.view': 'list and show departments; view folders of type `department`',
  'departments.manage': 'create, update and delete departments; manage folders of type `department`',
  'sharedItems.administrate':
    'use `/api/administration/shared-items*`: create items; administrate unrestricted items and items whose `administrate` grants include the user',
  'sharedItems.administrateAll': 'administrate every shared item',
  'entityPermissions.manage': 'manage grants on any target (otherwise only on targets the user administrates)',
  'notifications.send': '`POST /api/notifications`',
  'notifications.reset': '`DELETE /api/administration/notifications/reset`',
  'automations.manage': 'the automation and webhook endpoints',
  'tenant.administrate':
    "the tenant's sign-in settings: its OpenID Connect provider (`/api/administration/oidc`); its retention periods and sweep (`/api/administration/retention`)",
  ...Object.fromEntries(
    CONTENT_MODULES.flatMap((m) => [
      [`${m}.view`, `see ${m} content and folders (restriction grants may narrow it)`],
      [`${m}.manage`, `create, update and delete ${m} content and folders`],
    ]),
  ),
  'infoboard.reach':
    'see per person who has seen and confirmed an infoboard post (the reach list and its CSV), unless the tenant shows counts only',
  'manuals.reach':
    'see per person who has seen and confirmed a manual entry (the reach list and its CSV), unless the tenant shows counts only',
}

const KNOWN = new Set(PERMISSIONS)
export const isKnownPermission = (permission: string) => KNOWN.has(permission)

export const DEFAULT_ROLES = [
  { name: 'Administrator', permissions: ['*'] },
  {
    name: 'Employee',
    permissions: [
      'users.view',
      'departments.view',
      'calendar.view',
      'filemanager.view',
      'forms.view',
      'infoboard.view',
      'manuals.view',
      'tasks.view',
    ],
  },
] as const
