import type { ColumnType, Generated, Kysely, Transaction } from 'kysely'

/** Timestamps come back already formatted `YYYY-MM-DD HH:MM:SS` (see driver/type-parsers.ts). */
export type Timestamp = ColumnType<string, string | Date | undefined, string | Date>
export type NullableTimestamp = ColumnType<string | null, string | Date | null | undefined, string | Date | null>
/** bigint ids are parsed to numbers: they come from one sequence and stay far below 2^53. */
export type Id = Generated<number>

export interface TenantsTable {
  id: Id
  slug: string
  name: string
  settings: ColumnType<TenantSettings, string | undefined, string>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface TenantSettings {
  password_min_length?: number
  single_session?: boolean
  system_language?: string
  /** The demo tenant's state (`seeding` until it is complete; see modules/tenants/demo.ts). */
  demo?: 'seeding' | 'complete'
}

/** Who saw and confirmed a record that must be read (issue 41); `target_type` is the content alias. */
export interface ContentReadsTable {
  tenant_id: number
  target_type: string
  target_id: number
  user_id: number
  seen_at: Generated<string>
  confirmed_at: NullableTimestamp
}

export interface ContentRemindersTable {
  id: Id
  tenant_id: number
  target_type: string
  target_id: number
  actor_id: number | null
  recipients: Generated<number>
  created_at: Timestamp
}

export interface ContentReminderRecipientsTable {
  tenant_id: number
  reminder_id: number
  user_id: number
}

export interface LanguagesTable {
  id: string
  name: string
}

export interface RolesTable {
  id: Id
  tenant_id: number
  name: string
  permissions: string[]
  active: Generated<boolean>
  folder_id: number | null
  requires_mfa: Generated<boolean>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface DepartmentsTable {
  id: Id
  tenant_id: number
  name: string
  folder_id: number | null
  notification_setting_id: number | null
  /** The identity provider's id of the group (SCIM `externalId`). */
  external_id: Generated<string | null>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface DepartmentUsersTable {
  tenant_id: number
  department_id: number
  user_id: number
}

export interface NotificationSettingsTable {
  id: Id
  tenant_id: number
  key: string
  sort_number: number
  created_at: Timestamp
  updated_at: Timestamp
}

export interface UsersTable {
  id: Id
  tenant_id: number
  username: string
  password_hash: string
  first_name: Generated<string>
  last_name: Generated<string>
  active: Generated<boolean>
  active_derived: Generated<boolean>
  group_account: Generated<boolean>
  role_id: number
  lang_id: string | null
  profile_picture: string | null
  street: string | null
  zipcode: string | null
  city: string | null
  email: string | null
  phone: string | null
  birthdate: NullableTimestamp
  gender: string | null
  entering_date: NullableTimestamp
  leaving_date: NullableTimestamp
  staff_number: string | null
  wants_email_notifications: Generated<boolean>
  email_digest: Generated<'immediate' | 'daily' | 'weekly'>
  default_route: string | null
  prevent_logout: Generated<boolean>
  password_change_required: Generated<boolean>
  logout_requested_at: NullableTimestamp
  created_at: Timestamp
  updated_at: Timestamp
  deleted_at: NullableTimestamp
  blacked_out_at: NullableTimestamp
  /** The identity provider's id of the user (SCIM `externalId`). */
  external_id: Generated<string | null>
}

export interface AccessTokensTable {
  id: Id
  tenant_id: number
  user_id: number
  token_hash: Buffer
  device_name: string | null
  created_at: Timestamp
  expires_at: Timestamp
  revoked_at: NullableTimestamp
  mfa_enrollment_only: Generated<boolean>
}

export interface LoginFailuresTable {
  id: Generated<number>
  tenant_slug: string
  username: string
  attempted_at: Timestamp
}

export interface EntityPermissionsTable {
  id: Id
  tenant_id: number
  key: string
  permission_entity: 'user' | 'role' | 'department'
  permission_entity_id: number
  target_entity: string
  target_entity_id: string
  created_at: Timestamp
  updated_at: Timestamp
}

export interface DomainEventsTable {
  id: Generated<string>
  tenant_id: number
  type: string
  occurred_at: Timestamp
  actor_id: number | null
  subject_type: string
  subject_id: string
  data: ColumnType<Record<string, unknown>, string, string>
}

export type FolderType =
  | 'department'
  | 'form'
  | 'infoboardChannel'
  | 'report'
  | 'reportDefinition'
  | 'role'
  | 'survey'
  | 'taskAssignment'
  | 'taskTemplate'

export interface FoldersTable {
  id: Id
  tenant_id: number
  type: FolderType
  parent_id: number | null
  lang_id: string
  icon_id: number | null
  show_on_menu: Generated<boolean>
  user_id: number | null
  /** Ancestor ids root first, then the folder's own id (maintained by the folders service). */
  path: number[]
  created_at: Timestamp
  updated_at: Timestamp
}

export interface FolderTranslationsTable {
  tenant_id: number
  folder_id: number
  lang_id: string
  name: string
  created_at: Timestamp
  updated_at: Timestamp
}

export interface NotificationsTable {
  id: Generated<string>
  tenant_id: number
  type: string
  notifiable_type: Generated<string>
  notifiable_id: number
  targetable_type: string
  targetable_id: number
  source_key: string
  data: ColumnType<Record<string, unknown>, string, string>
  seen_at: NullableTimestamp
  read_at: NullableTimestamp
  created_at: Timestamp
  updated_at: Timestamp
}

export interface GenericNotificationsTable {
  id: Id
  tenant_id: number
  title: string
  body: string
  url: string
  user_id: number | null
  department_ids: ColumnType<number[], number[] | undefined, number[]>
  user_ids: ColumnType<number[], number[] | undefined, number[]>
  created_at: Timestamp
}

export interface OutboundMessagesTable {
  id: Id
  tenant_id: number
  channel: 'email' | 'push'
  status: 'stored' | 'sent'
  user_id: number | null
  notification_id: string | null
  recipient: string | null
  subject: string | null
  body_html: string | null
  body_text: string | null
  payload: ColumnType<Record<string, unknown>, string | undefined, string>
  created_at: Timestamp
}

export interface AutomationsTable {
  id: Id
  tenant_id: number
  name: string
  event: string
  active: Generated<boolean>
  actions: ColumnType<Array<{ type: string; config: Record<string, unknown> }>, string, string>
  user_id: number | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface WebhookDeliveriesTable {
  id: Id
  tenant_id: number
  automation_id: number
  action_index: number
  event_id: string
  event_type: string
  event_timestamp: string
  event_data: ColumnType<Record<string, unknown>, string, string>
  url: string
  method: string
  status: Generated<'pending' | 'succeeded' | 'retrying' | 'failed'>
  series: Generated<number>
  attempts: Generated<number>
  response_status: number | null
  response_time_ms: number | null
  response_body: string | null
  error: string | null
  next_attempt_at: NullableTimestamp
  created_at: Timestamp
  updated_at: Timestamp
}

export interface SigningKeysTable {
  kid: string
  alg: string
  public_jwk: ColumnType<Record<string, unknown>, string, string>
  private_jwk: ColumnType<Record<string, unknown>, string, string>
  created_at: Timestamp
  retired_at: NullableTimestamp
}

export interface SharedItemsTable {
  id: Generated<string>
  tenant_id: number
  user_id: number | null
  type: string
  redirect_type: string
  targetable_type: string
  targetable_id: string
  config: ColumnType<Record<string, unknown>, string, string>
  created_at: Timestamp
  updated_at: Timestamp
  deleted_at: NullableTimestamp
}

/** One source of truth for table types; modules add their tables here as they land. */
/** One of a host's outbound delivery slots, leased by a running delivery (fleet-wide per-host bound). */
export interface OutboundHostLeasesTable {
  host: string
  slot: number
  holder: string
  leased_until: ColumnType<string, Date | string, Date | string>
}

export interface PushVapidKeysTable {
  id: Generated<number>
  public_key: string
  private_key: string
  created_at: Generated<string>
}

export interface PushSubscriptionsTable {
  id: Generated<number>
  tenant_id: number
  user_id: number
  endpoint: string
  p256dh: string
  auth: string
  expiration_time: number | null
  user_agent: string | null
  created_at: Generated<string>
  updated_at: Generated<string>
}

export interface PushDeliveriesTable {
  id: Generated<number>
  tenant_id: number
  subscription_id: number
  notification_id: string
  attempt: number
  status: 'sent' | 'retrying' | 'gone' | 'failed'
  response_status: number | null
  error: string | null
  created_at: Generated<string>
}

export interface NotificationPreferencesTable {
  tenant_id: number
  user_id: number
  notification_setting_id: number
  push: Generated<boolean>
  email: Generated<boolean>
}

export interface EmailDigestsTable {
  tenant_id: number
  user_id: number
  period: string
  covered_until: ColumnType<string, Date | string, Date | string>
  notification_count: number
  sent_at: ColumnType<string | null, Date | string | null | undefined, Date | string | null>
}

export interface AuditLogTable {
  id: Id
  tenant_id: number
  created_at: Generated<string>
  actor_id: number | null
  /** Who made the change when it was no user: `scim:<token id>`. */
  actor: Generated<string | null>
  action: string
  target_type: string
  target_id: string | null
  changes: ColumnType<Record<string, unknown>, string | undefined, string>
  request_id: string | null
  ip: string | null
  user_agent: string | null
}

export interface SharedItemAccessesTable {
  id: Id
  tenant_id: number
  shared_item_id: string
  user_id: number | null
  outcome: string
  url_type: string | null
  created_at: Generated<string>
}

export type {
  SessionActivityTable,
  AuthTicketsTable,
  PasswordResetRequestsTable,
  UserTotpTable,
  OidcProvidersTable,
  OidcIdentitiesTable,
} from './schema-identity.js'
import type {
  SessionActivityTable,
  AuthTicketsTable,
  PasswordResetRequestsTable,
  UserTotpTable,
  OidcProvidersTable,
  OidcIdentitiesTable,
} from './schema-identity.js'

export interface Database {
  tenants: TenantsTable
  content_reads: ContentReadsTable
  content_reminders: ContentRemindersTable
  content_reminder_recipients: ContentReminderRecipientsTable
  languages: LanguagesTable
  roles: RolesTable
  departments: DepartmentsTable
  department_users: DepartmentUsersTable
  notification_settings: NotificationSettingsTable
  users: UsersTable
  access_tokens: AccessTokensTable
  login_failures: LoginFailuresTable
  entity_permissions: EntityPermissionsTable
  domain_events: DomainEventsTable
  automations: AutomationsTable
  webhook_deliveries: WebhookDeliveriesTable
  outbound_host_leases: OutboundHostLeasesTable
  push_vapid_keys: PushVapidKeysTable
  push_subscriptions: PushSubscriptionsTable
  push_deliveries: PushDeliveriesTable
  notification_preferences: NotificationPreferencesTable
  email_digests: EmailDigestsTable
  signing_keys: SigningKeysTable
  notifications: NotificationsTable
  generic_notifications: GenericNotificationsTable
  outbound_messages: OutboundMessagesTable
  folders: FoldersTable
  folder_translations: FolderTranslationsTable
  shared_items: SharedItemsTable
  audit_log: AuditLogTable
  shared_item_accesses: SharedItemAccessesTable
  session_activity: SessionActivityTable
  auth_tickets: AuthTicketsTable
  password_reset_requests: PasswordResetRequestsTable
  user_totp: UserTotpTable
  oidc_providers: OidcProvidersTable
  oidc_identities: OidcIdentitiesTable
  scim_tokens: ScimTokensTable
  data_exports: DataExportsTable
  retention_settings: RetentionSettingsTable
  reading_settings: ReadingSettingsTable
  rate_limit_counters: RateLimitCountersTable
  tenant_limits: TenantLimitsTable
  sync_clocks: SyncClocksTable
  sync_changes: SyncChangesTable
  sync_access_changes: SyncAccessChangesTable
  sync_views: SyncViewsTable
  sync_view_lists: SyncViewListsTable
}

/** A tenant's change clock (issue 43): bumped under its row lock, so versions are seen in commit order. */
export interface SyncClocksTable {
  tenant_id: number
  version: ColumnType<number, number | undefined, number>
  /** Change records at or below this version were purged: older cursors answer 410 sync_reset. */
  horizon: ColumnType<number, number | undefined, number>
  /** Every record still pending changed at or after this (the probes start here); null: anywhere. */
  pending_from: ColumnType<Date | null, Date | null | undefined, Date | null>
}

/** The latest change of one synced entity (one row per entity, upserted). */
export interface SyncChangesTable {
  tenant_id: number
  entity: string
  entity_id: string
  /** Null while pending: given by the next reader of the tenant's feed (`settleSyncClock`). */
  version: number | null
  deleted: boolean
  /** The one user who may see the entity (own records such as notifications), else null. */
  user_id: number | null
  changed_at: ColumnType<string, Date | string | undefined, Date | string>
}

/** A change of the access of some users at a version: one user, a role's or a department's members, or all. */
export interface SyncAccessChangesTable {
  id: Id
  tenant_id: number
  /** Null while pending (see `SyncChangesTable.version`). */
  version: number | null
  scope: 'tenant' | 'user' | 'role' | 'department'
  scope_id: number | null
  created_at: ColumnType<string, Date | string | undefined, Date | string>
}

/** A client view: what one device was given at a cursor (the client-view record); its ids in `sync_view_lists`. */
export interface SyncViewsTable {
  id: Id
  tenant_id: number
  user_id: number
  device: string
  version: number
  created_at: ColumnType<string, Date | string | undefined, Date | string>
}

/** The ids of one entity a client view holds (a jsonb array of ids as text). */
export interface SyncViewListsTable {
  tenant_id: number
  view_id: number
  user_id: number
  entity: string
  ids: ColumnType<string[], string, string>
}

/** Bearer tokens of SCIM clients (identity providers); only the SHA-256 of a token is stored. */
export interface RateLimitCountersTable {
  tenant_id: number
  key: string
  window_start: ColumnType<string, Date | string, Date | string>
  used: number
  granted: number
  quota: number
}

export interface TenantLimitsTable {
  tenant_id: number
  /** Overrides of the default limits: `{"token":{"read":5000},"tenant":{"expensive":500},"max_in_flight":64}`. */
  limits: ColumnType<Record<string, unknown>, string, string>
  exempt: ColumnType<boolean, boolean | undefined, boolean>
  updated_at: ColumnType<string, Date | string | undefined, Date | string>
}

export interface ScimTokensTable {
  id: Id
  tenant_id: number
  name: string
  token_hash: Buffer
  /** The role of users a SCIM client creates. */
  default_role_id: number
  created_by: number | null
  created_at: Timestamp
  revoked_at: NullableTimestamp
}

export type Db = Kysely<Database>
export type Trx = Transaction<Database>

/** A requested personal-data export (migration 0170); the archive is a file of the storage directory. */
export interface DataExportsTable {
  id: Id
  tenant_id: number
  /** Whose data the archive holds. */
  user_id: number
  /** Who asked (the person, or an administrator with `users.export`). */
  requested_by: number | null
  status: Generated<'pending' | 'ready' | 'failed' | 'expired'>
  file_name: string | null
  size: number | null
  error: string | null
  created_at: Timestamp
  ready_at: NullableTimestamp
  expires_at: NullableTimestamp
  /** SHA-256 of the current download link's token (single use). */
  link_hash: Buffer | null
  link_expires_at: NullableTimestamp
}

/** A tenant's works-council setting for reading data (migration 0205); no row = `named`. */
export interface ReadingSettingsTable {
  tenant_id: number
  reach_detail: 'named' | 'counts_only'
  updated_at: Generated<Timestamp>
}

/** A tenant's retention period of one data class (migration 0170); no row = the default. */
export interface RetentionSettingsTable {
  tenant_id: number
  data_class: string
  days: number
  updated_at: Timestamp
}
