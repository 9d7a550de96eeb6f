/**
 * How each table is placed on a Citus cluster (docs/citus.md). Every table of the migrated schema
 * must be listed here: the schema-rules test (src/platform/db/schema-rules.test.ts) fails on an unlisted one,
 * and `workplace db distribute` refuses to run.
 *
 * - `tenant`: distributed by `tenant_id`, all colocated. Primary key and every unique constraint or
 *   index contain `tenant_id`; foreign keys to other tenant tables include `tenant_id`; every
 *   request statement filters it by `tenant_id = <one value>`.
 * - `global`: a reference table (a full copy on every node): small, rarely written, shared by tenants.
 * - `local`: stays on the coordinator only (bookkeeping never joined with tenant tables).
 *
 * Adding a table = one line below.
 */
export type TableClass = 'tenant' | 'global' | 'local'

export const TABLE_CLASSES: Readonly<Record<string, TableClass>> = {
  // global: reference tables
  tenants: 'global',
  languages: 'global',
  signing_keys: 'global',
  push_vapid_keys: 'global',
  // local: coordinator only
  kysely_migration: 'local',
  kysely_migration_lock: 'local',
  login_failures: 'local', // keyed by tenant slug before any tenant is known; read alone
  outbound_host_leases: 'local', // per-host delivery slots of the workers, shared by tenants; read alone
  // tenant: distributed by tenant_id
  access_tokens: 'tenant',
  audit_log: 'tenant',
  automations: 'tenant',
  calendar_events: 'tenant',
  content_reads: 'tenant',
  content_reminder_recipients: 'tenant',
  content_reminders: 'tenant',
  department_users: 'tenant',
  departments: 'tenant',
  domain_events: 'tenant',
  email_digests: 'tenant',
  entity_permissions: 'tenant',
  filemanager_directories: 'tenant',
  filemanager_files: 'tenant',
  folder_translations: 'tenant',
  folders: 'tenant',
  form_messages: 'tenant',
  forms: 'tenant',
  generic_notifications: 'tenant',
  infoboard_comments: 'tenant',
  infoboard_posts: 'tenant',
  manual_chapters: 'tenant',
  manual_entries: 'tenant',
  notification_settings: 'tenant',
  notification_preferences: 'tenant',
  notifications: 'tenant',
  outbound_messages: 'tenant',
  push_deliveries: 'tenant',
  push_subscriptions: 'tenant',
  roles: 'tenant',
  scim_tokens: 'tenant',
  shared_item_accesses: 'tenant',
  shared_items: 'tenant',
  task_executions: 'tenant',
  users: 'tenant',
  webhook_deliveries: 'tenant',
  // sign-in (issue 34, migration 0120)
  session_activity: 'tenant',
  auth_tickets: 'tenant',
  password_reset_requests: 'tenant',
  user_totp: 'tenant',
  oidc_providers: 'tenant',
  oidc_identities: 'tenant',
  // personal-data exports (issue 45, migration 0170)
  data_exports: 'tenant',
  retention_settings: 'tenant',
  reading_settings: 'tenant',
  // fair-use limits (issue 42, migration 0180)
  rate_limit_counters: 'tenant',
  tenant_limits: 'tenant',
  // offline clients' change feed (issue 43, migration 0210)
  sync_clocks: 'tenant',
  sync_changes: 'tenant',
  sync_access_changes: 'tenant',
  sync_views: 'tenant',
  sync_view_lists: 'tenant',
}

/** Schemas whose tables are all `local` (the job queue keeps its own schema on the coordinator). */
export const LOCAL_SCHEMAS: readonly string[] = ['graphile_worker']

/** The class of `schema.table`, or undefined when nobody classified it. */
export function tableClass(schema: string, table: string): TableClass | undefined {
  if (LOCAL_SCHEMAS.includes(schema)) return 'local'
  return schema === 'public' ? TABLE_CLASSES[table] : undefined
}

export function tenantTables(): string[] {
  return Object.entries(TABLE_CLASSES)
    .filter(([, kind]) => kind === 'tenant')
    .map(([table]) => table)
}
