import FormData from 'form-data'
import { PERMISSIONS } from '../../../src/modules/roles/index.js'
import type { TenantFixtures } from './fixtures.js'

/**
 * The classification of every registered route. The route-table suite FAILS when a registered
 * route is missing here, so a new route must be classified (and is then swept) before it can ship.
 *
 * - public: reachable without a token; never swept.
 * - self:   any authenticated user, acting on their own records only (no permission to lack).
 * - list:   a list of the tenant's rows (GET without a foreign ID).
 * - action: a create or another request without an ID in the path.
 * - id:     a request naming a row by ID: another tenant's ID must give 404 and change nothing.
 */
export type RouteKind = 'public' | 'self' | 'list' | 'action' | 'id'

export interface Payload {
  payload?: unknown
  headers?: Record<string, string>
}

export interface RouteClass {
  kind: RouteKind
  /** The permission the route requires; undefined = any authenticated user. */
  permission?: string
  /** Permissions of the function-level (BFLA) probe; default: every permission outside the required one's module. */
  lacking?: string[]
  /** The concrete URL with tenant A's IDs; undefined when that resource kind has no fixture (yet). */
  path: (f: TenantFixtures) => string | undefined
  /** A body that is valid apart from authorization (so the request reaches the access check). */
  body?: (f: TenantFixtures) => Payload
  /** Why the sweep does not call this route. */
  skip?: string
  /** Lacking the permission hides rows (200 without them) instead of refusing. */
  hides?: boolean
  /** The body is not known to be valid: a 422 (validation before the lookup, changing nothing) is accepted too. */
  lenient?: boolean
  /** Holding the route's permission lets the caller inspect every row it names (an auditor's explain): the existence-oracle suite compares only foreign and missing ids. */
  seesAll?: boolean
}

/** Every permission string of contract 00 §5 but `*`: the one list of src/platform/auth/permissions.ts. */
export const ALL_PERMISSIONS = PERMISSIONS.filter((permission) => permission !== '*')

/** The BFLA probe's permissions: everything except the required permission's whole module. */
export function lackingPermissions(route: RouteClass): string[] {
  if (route.lacking) return route.lacking
  const module = route.permission!.split('.')[0]
  return ALL_PERMISSIONS.filter((p) => p.split('.')[0] !== module)
}

const json = (payload: unknown): Payload => ({ payload })
const fixed = (url: string) => () => url
const stamp = '2026-01-01 00:00:00'
const auto = (f: TenantFixtures) => `/api/administration/automations/${f.automationId}`
const folder = (f: TenantFixtures, suffix = '') => (f.folderId ? `/api/folders/${f.folderId}${suffix}` : undefined)
const grant = (f: TenantFixtures) => (f.grantId ? `/api/entity-permissions/${f.grantId}` : undefined)

function csvUpload(): Payload {
  const form = new FormData()
  form.append(
    'user_data_csv',
    Buffer.from('username,password,first_name,last_name\nrel-csv-user,secret-password-1,Csv,User\n'),
    { filename: 'users.csv', contentType: 'text/csv' },
  )
  return { payload: form.getBuffer(), headers: form.getHeaders() }
}

/** URLs starting with these are public (the docs UI and its assets, the web app's static files). */
export const PUBLIC_PREFIXES = ['/docs', '/app']

export const ROUTE_CLASSES: Record<string, RouteClass> = {
  // platform
  'GET /health/live': { kind: 'public', path: fixed('/health/live') },
  'GET /health/ready': { kind: 'public', path: fixed('/health/ready') },
  'GET /api/openapi.json': { kind: 'public', path: fixed('/api/openapi.json') },
  'GET /.well-known/jwks.json': { kind: 'public', path: fixed('/.well-known/jwks.json') },

  // auth
  'POST /api/auth/login': { kind: 'public', path: fixed('/api/auth/login') },
  'POST /api/auth/logout': {
    kind: 'self',
    path: fixed('/api/auth/logout'),
    skip: "revokes the caller's own token (covered by src/modules/identity/auth.test.ts)",
  },

  // sign-in (issue 34): password reset and single sign-on are public; sessions and factors are one's own
  'POST /api/auth/password-reset': { kind: 'public', path: fixed('/api/auth/password-reset') },
  'POST /api/auth/password-reset/confirm': { kind: 'public', path: fixed('/api/auth/password-reset/confirm') },
  'GET /api/auth/oidc/:tenant/start': { kind: 'public', path: (f) => `/api/auth/oidc/${f.tenant.slug}/start` },
  'GET /api/auth/oidc/callback': { kind: 'public', path: fixed('/api/auth/oidc/callback') },
  'GET /api/users/current/sessions': { kind: 'self', path: fixed('/api/users/current/sessions') },
  'DELETE /api/users/current/sessions/:sid': {
    kind: 'id',
    path: (f) => `/api/users/current/sessions/${f.victimSessionId}`,
  },
  'GET /api/users/:id/sessions': {
    kind: 'id',
    permission: 'users.administrate',
    path: (f) => `/api/users/${f.victim.id}/sessions`,
  },
  'DELETE /api/users/:id/sessions/:sid': {
    kind: 'id',
    permission: 'users.administrate',
    path: (f) => `/api/users/${f.victim.id}/sessions/${f.victimSessionId}`,
  },
  'POST /api/users/current/totp': {
    kind: 'self',
    path: fixed('/api/users/current/totp'),
    body: () => json({ password: 'not-the-password' }),
    lenient: true,
  },
  'POST /api/users/current/totp/confirm': {
    kind: 'self',
    path: fixed('/api/users/current/totp/confirm'),
    body: () => json({ code: '000000' }),
  },
  'DELETE /api/users/current/totp': {
    kind: 'self',
    path: fixed('/api/users/current/totp'),
    body: () => json({ code: '000000' }),
  },
  'DELETE /api/users/:id/totp': {
    kind: 'id',
    permission: 'users.administrate',
    path: (f) => `/api/users/${f.victim.id}/totp`,
  },
  'GET /api/administration/oidc': {
    kind: 'list',
    permission: 'tenant.administrate',
    path: fixed('/api/administration/oidc'),
  },
  'PUT /api/administration/oidc': {
    kind: 'action',
    permission: 'tenant.administrate',
    path: fixed('/api/administration/oidc'),
    // the issuer cannot be reached from the test: 422 on issuer once authorized
    body: () => json({ issuer: 'https://idp.example.invalid', client_id: 'rel-client', client_secret: 'rel-secret' }),
    lenient: true,
  },
  'DELETE /api/administration/oidc': {
    kind: 'action',
    permission: 'tenant.administrate',
    path: fixed('/api/administration/oidc'),
  },

  // languages
  'GET /api/languages': { kind: 'self', path: fixed('/api/languages') },

  // roles
  'GET /api/roles': { kind: 'list', permission: 'roles.view', path: fixed('/api/roles') },
  'GET /api/roles/:id': { kind: 'id', permission: 'roles.view', path: (f) => `/api/roles/${f.roleId}` },
  'POST /api/roles': {
    kind: 'action',
    permission: 'roles.manage',
    path: fixed('/api/roles'),
    body: () => json({ name: 'rel-role', permissions: ['users.view'] }),
  },
  'PUT /api/roles/:id': {
    kind: 'id',
    permission: 'roles.manage',
    path: (f) => `/api/roles/${f.roleId}`,
    body: () => json({ name: 'hijacked' }),
  },
  'DELETE /api/roles/:id': { kind: 'id', permission: 'roles.manage', path: (f) => `/api/roles/${f.roleId}` },

  // departments
  'GET /api/departments': { kind: 'list', permission: 'departments.view', path: fixed('/api/departments') },
  'GET /api/departments/:id': {
    kind: 'id',
    permission: 'departments.view',
    path: (f) => `/api/departments/${f.departmentId}`,
  },
  'POST /api/departments': {
    kind: 'action',
    permission: 'departments.manage',
    path: fixed('/api/departments'),
    body: (f) => json({ name: 'rel-dept', user_ids: [f.employee.id] }),
  },
  'PUT /api/departments/:id': {
    kind: 'id',
    permission: 'departments.manage',
    path: (f) => `/api/departments/${f.departmentId}`,
    body: () => json({ name: 'hijacked' }),
  },
  'DELETE /api/departments/:id': {
    kind: 'id',
    permission: 'departments.manage',
    path: (f) => `/api/departments/${f.departmentId}`,
  },

  // users
  'GET /api/users': { kind: 'list', permission: 'users.view', path: fixed('/api/users') },
  'GET /api/users/deleted': { kind: 'list', permission: 'users.administrate', path: fixed('/api/users/deleted') },
  'GET /api/users/current': { kind: 'self', path: fixed('/api/users/current') },
  'GET /api/users/import-template': {
    kind: 'action',
    permission: 'users.administrate',
    path: fixed('/api/users/import-template'),
  },
  'GET /api/users/:id': { kind: 'id', permission: 'users.view', path: (f) => `/api/users/${f.victim.id}` },
  'POST /api/users': {
    kind: 'action',
    permission: 'users.create',
    path: fixed('/api/users'),
    body: (f) =>
      json({
        username: 'rel-created-user',
        password: 'a-long-enough-password-1',
        first_name: 'R',
        last_name: 'U',
        role_id: f.tenant.employeeRoleId,
        lang_id: 'en-US',
      }),
  },
  'POST /api/users/csv': {
    kind: 'action',
    permission: 'users.administrate',
    path: fixed('/api/users/csv'),
    body: () => csvUpload(),
  },
  'PUT /api/users/:id': {
    kind: 'id',
    permission: 'users.update',
    path: (f) => `/api/users/${f.victim.id}`,
    body: () => json({ first_name: 'Hijacked' }),
  },
  'POST /api/users/logout/:id': {
    kind: 'id',
    permission: 'users.administrate',
    path: (f) => `/api/users/logout/${f.victim.id}`,
  },
  'POST /api/users/restore/:id': {
    kind: 'id',
    permission: 'users.administrate',
    path: (f) => `/api/users/restore/${f.deletedUserId}`,
  },
  'DELETE /api/users/blackout/:id': {
    kind: 'id',
    permission: 'users.administrate',
    path: (f) => `/api/users/blackout/${f.victim.id}`,
  },
  'DELETE /api/users/:id': { kind: 'id', permission: 'users.delete', path: (f) => `/api/users/${f.victim.id}` },
  'GET /users/:id/profile-picture/:fileName?': {
    kind: 'id',
    permission: 'users.view',
    path: (f) => `/users/${f.victim.id}/profile-picture`,
  },
  'GET /users/:id/profile-picture': {
    kind: 'id',
    permission: 'users.view',
    path: (f) => `/users/${f.victim.id}/profile-picture`,
  },
  'GET /users/:id/profile-picture/:fileName': {
    kind: 'id',
    permission: 'users.view',
    path: (f) => `/users/${f.victim.id}/profile-picture/p.png`,
  },

  // automations
  'GET /api/administration/automations': {
    kind: 'list',
    permission: 'automations.manage',
    path: fixed('/api/administration/automations'),
  },
  'POST /api/administration/automations': {
    kind: 'action',
    permission: 'automations.manage',
    path: fixed('/api/administration/automations'),
    body: () => json({ name: 'rel', event: 'user.created', actions: [] }),
  },
  'POST /api/administration/automations/validate-action': {
    kind: 'action',
    permission: 'automations.manage',
    path: fixed('/api/administration/automations/validate-action'),
    body: () => json({ type: 'webhook', config: { url: 'https://hooks.example.test/in' } }),
  },
  'GET /api/administration/automations/:id': { kind: 'id', permission: 'automations.manage', path: auto },
  'PUT /api/administration/automations/:id': {
    kind: 'id',
    permission: 'automations.manage',
    path: auto,
    body: () => json({ name: 'hijacked' }),
  },
  'DELETE /api/administration/automations/:id': { kind: 'id', permission: 'automations.manage', path: auto },
  // SCIM tokens (both users.administrate and departments.manage are required)
  'POST /api/administration/scim-tokens': {
    kind: 'action',
    permission: 'users.administrate',
    path: fixed('/api/administration/scim-tokens'),
    body: () => json({ name: 'rel' }),
  },
  'GET /api/administration/scim-tokens': {
    kind: 'list',
    permission: 'users.administrate',
    path: fixed('/api/administration/scim-tokens'),
  },
  'DELETE /api/administration/scim-tokens/:id': {
    kind: 'id',
    permission: 'users.administrate',
    path: (f) => (f.scimTokenId ? `/api/administration/scim-tokens/${f.scimTokenId}` : undefined),
  },
  ...scimRoutes(),
  'POST /api/administration/automations/:id/test': {
    kind: 'id',
    permission: 'automations.manage',
    path: (f) => `${auto(f)}/test`,
  },
  'GET /api/administration/automations/:id/deliveries': {
    kind: 'id',
    permission: 'automations.manage',
    path: (f) => `${auto(f)}/deliveries`,
  },
  'POST /api/administration/automations/:id/deliveries/:delivery/redeliver': {
    kind: 'id',
    permission: 'automations.manage',
    path: (f) => `${auto(f)}/deliveries/${f.deliveryId}/redeliver`,
  },

  // offline clients' change feed (issue 43): the caller's own view, filtered by each entity's rule
  'GET /api/sync': { kind: 'self', path: fixed('/api/sync') },

  // notifications
  'GET /api/notifications': { kind: 'self', path: fixed('/api/notifications') },
  'GET /api/notifications/count': { kind: 'self', path: fixed('/api/notifications/count') },
  'GET /api/notifications/stream': {
    kind: 'self',
    path: fixed('/api/notifications/stream'),
    skip: 'an endless Server-Sent Events stream (covered by src/modules/notifications/notifications-realtime.test.ts)',
  },
  'GET /api/notifications/type/:targetableType': {
    kind: 'self',
    path: fixed('/api/notifications/type/genericNotification'),
  },
  'GET /api/notifications/type/:targetableType/:targetableId': {
    kind: 'self',
    path: fixed('/api/notifications/type/genericNotification/1'),
  },
  'GET /api/notifications/:id': { kind: 'id', path: (f) => `/api/notifications/${f.notificationId}` },
  'POST /api/notifications': {
    kind: 'action',
    permission: 'notifications.send',
    path: fixed('/api/notifications'),
    body: (f) => json({ title: 'rel', body: '<p>x</p>', url: '/home', user_ids: [f.employee.id] }),
  },
  'PUT /api/notifications': { kind: 'self', path: fixed('/api/notifications'), body: () => json({ read_at: stamp }) },
  'PUT /api/notifications/type/:targetableType': {
    kind: 'self',
    path: fixed('/api/notifications/type/genericNotification'),
    body: () => json({ read_at: stamp }),
  },
  'PUT /api/notifications/type/:targetableType/:targetableId': {
    kind: 'self',
    path: fixed('/api/notifications/type/genericNotification/1'),
    body: () => json({ read_at: stamp }),
  },
  'PUT /api/notifications/:id': {
    kind: 'id',
    path: (f) => `/api/notifications/${f.notificationId}`,
    body: () => json({ read_at: stamp }),
  },
  'DELETE /api/administration/notifications/reset': {
    kind: 'action',
    permission: 'notifications.reset',
    path: fixed('/api/administration/notifications/reset'),
  },
  'GET /api/notification-settings': { kind: 'self', path: fixed('/api/notification-settings') },
  'GET /api/push/vapid-public-key': { kind: 'self', path: fixed('/api/push/vapid-public-key') },
  'GET /api/push-subscriptions': { kind: 'self', path: fixed('/api/push-subscriptions') },
  'POST /api/push-subscriptions': {
    kind: 'self',
    path: fixed('/api/push-subscriptions'),
    skip: "registers the caller's own device (covered by src/modules/notifications/push.test.ts)",
  },
  'DELETE /api/push-subscriptions/:id': { kind: 'id', path: (f) => `/api/push-subscriptions/${f.pushSubscriptionId}` },
  'GET /api/users/current/notification-preferences': {
    kind: 'self',
    path: fixed('/api/users/current/notification-preferences'),
  },
  'PUT /api/users/current/notification-preferences': {
    kind: 'self',
    path: fixed('/api/users/current/notification-preferences'),
    body: () => json([]),
  },
  'GET /api/notification-settings/:id': {
    kind: 'id',
    path: (f) => `/api/notification-settings/${f.notificationSettingId}`,
  },

  // folders (a `form` folder: forms.view / forms.manage)
  'GET /api/folders': { kind: 'list', permission: 'forms.view', hides: true, path: fixed('/api/folders') },
  'GET /api/folders/:id': { kind: 'id', permission: 'forms.view', path: (f) => folder(f) },
  'POST /api/folders': {
    kind: 'action',
    permission: 'forms.manage',
    path: fixed('/api/folders'),
    body: (f) => json({ type: 'form', name: 'rel-folder', ...(f.folderId ? { parent_id: f.folderId } : {}) }),
  },
  'PUT /api/folders/:id': {
    kind: 'id',
    permission: 'forms.manage',
    path: (f) => folder(f),
    body: () => json({ name: 'hijacked' }),
  },
  'DELETE /api/folders/:id': { kind: 'id', permission: 'forms.manage', path: (f) => folder(f) },

  // entity permissions: managing needs entityPermissions.manage or administrate access to the target,
  // which module managers may have, so the probe holds no permission at all
  'GET /api/entity-permissions/:targetEntity/:targetEntityId': {
    kind: 'id',
    permission: 'entityPermissions.manage',
    lacking: [],
    path: (f) => (f.folderId ? `/api/entity-permissions/folder/${f.folderId}` : undefined),
  },
  'GET /api/entity-permissions/:id': { kind: 'id', permission: 'entityPermissions.manage', lacking: [], path: grant },
  // a caller who may not see the target gets the answer for a target that does not exist (422 on
  // target_entity_id, the existence rule of decision 0004; existence-oracles.reliability.ts checks it)
  'POST /api/entity-permissions': {
    kind: 'action',
    permission: 'entityPermissions.manage',
    lacking: [],
    lenient: true,
    path: fixed('/api/entity-permissions'),
    body: (f) =>
      json({
        key: 'view',
        permission_entity: 'user',
        permission_entity_id: f.victim.id,
        target_entity: 'folder',
        target_entity_id: f.folderId ?? 1,
      }),
  },
  'DELETE /api/entity-permissions/:id': {
    kind: 'id',
    permission: 'entityPermissions.manage',
    lacking: [],
    path: grant,
  },
}

/** Content modules (contract 30): `<module>.view` to read, `<module>.manage` to change. */
const row =
  (table: string, prefix: string, suffix = '') =>
  (f: TenantFixtures) =>
    f.content[table] ? `${prefix}/${f.content[table]}${suffix}` : undefined
function contentRoutes(base: string, table: string, module: string, update: Payload): Record<string, RouteClass> {
  return {
    [`GET ${base}`]: { kind: 'list', permission: `${module}.view`, path: fixed(base) },
    [`POST ${base}`]: {
      kind: 'action',
      permission: `${module}.manage`,
      path: fixed(base),
      body: () => update,
      lenient: true,
    },
    [`GET ${base}/:id`]: { kind: 'id', permission: `${module}.view`, path: row(table, base) },
    [`PUT ${base}/:id`]: {
      kind: 'id',
      permission: `${module}.manage`,
      path: row(table, base),
      body: () => update,
      lenient: true,
    },
    [`DELETE ${base}/:id`]: { kind: 'id', permission: `${module}.manage`, path: row(table, base) },
  }
}
const titled = json({ title: 'hijacked' })
Object.assign(ROUTE_CLASSES, {
  ...contentRoutes('/api/calendar/events', 'calendar_events', 'calendar', titled),
  ...contentRoutes('/api/forms', 'forms', 'forms', json({ name: 'hijacked' })),
  ...contentRoutes('/api/infoboard/posts', 'infoboard_posts', 'infoboard', titled),
  ...contentRoutes('/api/manuals/chapters', 'manual_chapters', 'manuals', titled),
  ...contentRoutes('/api/tasks/executions', 'task_executions', 'tasks', titled),
  'GET /api/forms/:id/messages': {
    kind: 'id',
    permission: 'forms.view',
    path: row('forms', '/api/forms', '/messages'),
  },
  'POST /api/forms/:id/messages': {
    kind: 'id',
    permission: 'forms.view',
    path: row('forms', '/api/forms', '/messages'),
    body: () => json({ data: {} }),
    lenient: true,
  },
  'GET /api/infoboard/posts/:id/comments': {
    kind: 'id',
    permission: 'infoboard.view',
    path: row('infoboard_posts', '/api/infoboard/posts', '/comments'),
  },
  'POST /api/infoboard/posts/:id/comments': {
    kind: 'id',
    permission: 'infoboard.view',
    path: row('infoboard_posts', '/api/infoboard/posts', '/comments'),
    body: () => json({ body: 'x' }),
    lenient: true,
  },
  'GET /api/manuals/chapters/:id/entries': {
    kind: 'id',
    permission: 'manuals.view',
    path: row('manual_chapters', '/api/manuals/chapters', '/entries'),
  },
  'POST /api/manuals/chapters/:id/entries': {
    kind: 'id',
    permission: 'manuals.manage',
    path: row('manual_chapters', '/api/manuals/chapters', '/entries'),
    body: () => json({ title: 't', body: 'b' }),
    lenient: true,
  },
  'GET /api/manuals/entries/:id': {
    kind: 'id',
    permission: 'manuals.view',
    path: row('manual_entries', '/api/manuals/entries'),
  },
  'PUT /api/manuals/entries/:id': {
    kind: 'id',
    permission: 'manuals.manage',
    path: row('manual_entries', '/api/manuals/entries'),
    body: () => titled,
    lenient: true,
  },
  'DELETE /api/manuals/entries/:id': {
    kind: 'id',
    permission: 'manuals.manage',
    path: row('manual_entries', '/api/manuals/entries'),
  },
  'GET /api/filemanager/directories': {
    kind: 'list',
    permission: 'filemanager.view',
    path: fixed('/api/filemanager/directories'),
  },
  'POST /api/filemanager/directories': {
    kind: 'action',
    permission: 'filemanager.manage',
    path: fixed('/api/filemanager/directories'),
    body: () => json({ name: 'rel' }),
    lenient: true,
  },
  'GET /api/filemanager/directories/:id': {
    kind: 'id',
    permission: 'filemanager.view',
    path: row('filemanager_directories', '/api/filemanager/directories'),
  },
  'DELETE /api/filemanager/directories/:id': {
    kind: 'id',
    permission: 'filemanager.manage',
    path: row('filemanager_directories', '/api/filemanager/directories'),
  },
  'GET /api/filemanager/files': { kind: 'list', permission: 'filemanager.view', path: fixed('/api/filemanager/files') },
  'POST /api/filemanager/files': {
    kind: 'action',
    permission: 'filemanager.manage',
    path: fixed('/api/filemanager/files'),
    body: () => json({}),
    lenient: true,
  },
  'GET /api/filemanager/files/:id': {
    kind: 'id',
    permission: 'filemanager.view',
    path: row('filemanager_files', '/api/filemanager/files'),
  },
  'DELETE /api/filemanager/files/:id': {
    kind: 'id',
    permission: 'filemanager.manage',
    path: row('filemanager_files', '/api/filemanager/files'),
  },
  'GET /api/filemanager/files/:id/content': {
    kind: 'id',
    permission: 'filemanager.view',
    path: row('filemanager_files', '/api/filemanager/files', '/content'),
  },
  'GET /api/filemanager/files/:id/download': {
    kind: 'id',
    permission: 'filemanager.view',
    path: row('filemanager_files', '/api/filemanager/files', '/download'),
  },
  'GET /api/filemanager/files/:id/poster': {
    kind: 'id',
    permission: 'filemanager.view',
    path: row('filemanager_files', '/api/filemanager/files', '/poster'),
  },
  // shared items (contract 20): reading follows the target's visibility; administration needs sharedItems.administrate
  'GET /api/shared-items': { kind: 'self', path: fixed('/api/shared-items') },
  'GET /api/shared-items/:id': { kind: 'id', path: row('shared_items', '/api/shared-items') },
  'GET /api/shared-items/:id/resolve': { kind: 'id', path: row('shared_items', '/api/shared-items', '/resolve') },
  'GET /shared/:id': { kind: 'id', path: row('shared_items', '/shared') },
  'GET /api/administration/shared-items': {
    kind: 'list',
    permission: 'sharedItems.administrate',
    hides: true,
    path: fixed('/api/administration/shared-items'),
  },
  'POST /api/administration/shared-items': {
    kind: 'action',
    permission: 'sharedItems.administrate',
    path: fixed('/api/administration/shared-items'),
    body: (f) => json({ type: 'form', targetable_id: f.content.forms ?? 1 }),
    lenient: true,
  },
  'GET /api/administration/shared-items/:id/accesses': {
    kind: 'id',
    permission: 'sharedItems.administrate',
    path: row('shared_items', '/api/administration/shared-items', '/accesses'),
  },
  'GET /api/administration/audit-log': {
    kind: 'list',
    permission: 'audit.view',
    path: fixed('/api/administration/audit-log'),
  },
  'GET /api/administration/access/explain': {
    kind: 'id',
    permission: 'audit.view',
    seesAll: true,
    path: (f) =>
      f.folderId
        ? `/api/administration/access/explain?user_id=${f.employee.id}&target_entity=folder&target_entity_id=${f.folderId}`
        : undefined,
  },
  'GET /api/administration/shared-items/:id': {
    kind: 'id',
    permission: 'sharedItems.administrate',
    path: row('shared_items', '/api/administration/shared-items'),
  },
  'PUT /api/administration/shared-items/:id': {
    kind: 'id',
    permission: 'sharedItems.administrate',
    path: row('shared_items', '/api/administration/shared-items'),
    body: () => json({ config: {} }),
    lenient: true,
  },
  'DELETE /api/administration/shared-items/:id': {
    kind: 'id',
    permission: 'sharedItems.administrate',
    path: row('shared_items', '/api/administration/shared-items'),
  },
  'POST /api/administration/shared-items/:id/restore': {
    kind: 'id',
    permission: 'sharedItems.administrate',
    path: row('shared_items', '/api/administration/shared-items', '/restore'),
  },

  // fair-use limits (issue 42): the usage is the administrators'; the operator's routes take OPERATOR_TOKEN
  'GET /api/administration/usage': { kind: 'list', permission: '*', path: fixed('/api/administration/usage') },
  'GET /api/operator/tenants/:tenant/limits': {
    kind: 'id',
    path: (f) => `/api/operator/tenants/${f.tenant.slug}/limits`,
    skip: "the operator's token only (OPERATOR_TOKEN), never a tenant's: src/modules/limits/limits.test.ts",
  },
  'PUT /api/operator/tenants/:tenant/limits': {
    kind: 'id',
    path: (f) => `/api/operator/tenants/${f.tenant.slug}/limits`,
    skip: "the operator's token only (OPERATOR_TOKEN), never a tenant's: src/modules/limits/limits.test.ts",
  },

  // sign-in holes (issue 39): linking an identity to one's own account, or an administrator linking one
  'POST /api/users/current/oidc-link': {
    kind: 'self',
    path: fixed('/api/users/current/oidc-link'),
    body: () => json({ password: 'not-the-password', redirect_uri: 'http://127.0.0.1/app/sign-in' }),
    lenient: true,
  },
  'PUT /api/users/:id/oidc-identity': {
    kind: 'id',
    permission: 'users.administrate',
    path: (f) => `/api/users/${f.victim.id}/oidc-identity`,
    body: () => json({ subject: 'route-sweep-subject' }),
    lenient: true,
  },

  // data lifecycle (issue 45)
  'POST /api/users/:id/erasure': {
    kind: 'id',
    permission: 'users.administrate',
    path: (f) => `/api/users/${f.victim.id}/erasure`,
  },
  'POST /api/users/current/data-export': { kind: 'self', path: fixed('/api/users/current/data-export') },
  'POST /api/users/:id/data-export': {
    kind: 'id',
    permission: 'users.export',
    path: (f) => `/api/users/${f.victim.id}/data-export`,
  },
  'GET /api/data-exports': { kind: 'self', path: fixed('/api/data-exports') },
  'GET /api/data-exports/:id': {
    kind: 'id',
    path: fixed('/api/data-exports/1'),
    skip: "no export among the fixtures; another user's export answers as a missing one in src/modules/users/data-export.test.ts",
  },
  'POST /api/data-exports/:id/download-link': {
    kind: 'id',
    path: fixed('/api/data-exports/1/download-link'),
    skip: "no export among the fixtures; another user's export answers as a missing one in src/modules/users/data-export.test.ts",
  },
  'GET /api/data-exports/download/:token': { kind: 'public', path: fixed('/api/data-exports/download/x') },
  'GET /api/administration/retention': {
    kind: 'list',
    permission: 'tenant.administrate',
    path: fixed('/api/administration/retention'),
  },
  'PUT /api/administration/retention': {
    kind: 'action',
    permission: 'tenant.administrate',
    path: fixed('/api/administration/retention'),
    body: () => json({}),
    lenient: true,
  },
  'POST /api/administration/retention/sweep': {
    kind: 'action',
    permission: 'tenant.administrate',
    path: fixed('/api/administration/retention/sweep?dry_run=true'),
  },

  // content that must be read (issue 41)
  ...readingRoutes('/api/infoboard/posts', 'infoboard_posts', 'infoboard'),
  ...readingRoutes('/api/manuals/entries', 'manual_entries', 'manuals'),
  'GET /api/administration/reading-settings': { kind: 'self', path: fixed('/api/administration/reading-settings') },
  'PUT /api/administration/reading-settings': {
    kind: 'action',
    permission: 'tenant.administrate',
    path: fixed('/api/administration/reading-settings'),
    body: () => json({ reach_detail: 'named' }),
  },
} satisfies Record<string, RouteClass>)

/** The reading routes of a content kind with confirmations (issue 41). */
function readingRoutes(base: string, table: string, module: string): Record<string, RouteClass> {
  const on = (suffix: string) => row(table, base, suffix)
  return {
    [`POST ${base}/:id/seen`]: { kind: 'id', permission: `${module}.view`, path: on('/seen') },
    [`POST ${base}/:id/confirmation`]: {
      kind: 'id',
      permission: `${module}.view`,
      path: on('/confirmation'),
      lenient: true,
    },
    [`GET ${base}/:id/reach`]: { kind: 'id', permission: `${module}.manage`, path: on('/reach') },
    [`GET ${base}/:id/reach/users`]: { kind: 'id', permission: `${module}.reach`, path: on('/reach/users') },
    [`POST ${base}/:id/reminders`]: {
      kind: 'id',
      permission: `${module}.manage`,
      path: on('/reminders'),
      lenient: true,
    },
  }
}

/** /scim/v2 takes SCIM tokens only (an access token is a 401 there): its isolation is src/modules/scim/scim.test.ts's. */
function scimRoutes(): Record<string, RouteClass> {
  const skip = 'authenticated by SCIM tokens only; tenant isolation both ways in src/modules/scim/scim.test.ts'
  const routes = [
    'GET /ServiceProviderConfig',
    'GET /ResourceTypes',
    'GET /ResourceTypes/:id',
    'GET /Schemas',
    'GET /Schemas/:id',
    ...['Users', 'Groups'].flatMap((r) => [
      `GET /${r}`,
      `POST /${r}`,
      ...['GET', 'PUT', 'PATCH', 'DELETE'].map((m) => `${m} /${r}/:id`),
    ]),
  ]
  return Object.fromEntries(
    routes.map((route) => {
      const [method, path] = route.split(' ')
      return [`${method} /scim/v2${path}`, { kind: 'id', path: fixed(`/scim/v2${path}`), skip }]
    }),
  )
}

/** The class of a registered route, or undefined when it is not classified. */
export function classify(method: string, url: string): RouteClass | undefined {
  const key = `${method} ${url}`
  if (ROUTE_CLASSES[key]) return ROUTE_CLASSES[key]
  if (PUBLIC_PREFIXES.some((prefix) => url === prefix || url.startsWith(`${prefix}/`)))
    return { kind: 'public', path: () => url }
  return undefined
}
