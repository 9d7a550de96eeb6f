import type { Db } from '../../platform/db/schema.js'
import { tenantTables } from '../../platform/db/table-classes.js'
import { deleteQueuedJobsNaming } from '../../platform/jobs/jobs.js'
import { anonymizeAuditFor } from '../audit/index.js'
import * as queries from './users-personal-data.queries.js'

/**
 * What each text-like column of each tenant table holds, and how an erasure (GDPR Art. 17: black-out,
 * `POST /api/users/{id}/erasure`) treats the person's rows (docs/data-protection.md). Every tenant
 * table is listed, and every column whose type can hold a person's data (text, varchar, json, jsonb,
 * arrays, bytea, inet): the erasure marker test (src/modules/users/erasure.test.ts) fails on a table or column
 * without a rule, so a new table is classified before it ships.
 *
 * - `not-personal`: codes, names of the tenant's own objects, ids, configuration; identifies nobody.
 * - `secret`: a hash or key; removed with the person's rows.
 * - `personal`: data about the person; their rows are deleted, or the value cleared or pseudonymised.
 * - `authored`: content the person wrote for the tenant (posts, comments, form messages, files); kept,
 *   shown under the pseudonym of the erased account ("Former employee …").
 */
export type ColumnRule = 'not-personal' | 'secret' | 'personal' | 'authored'

/**
 * How an erasure treats a table: `keep` (nothing of the person besides authored content),
 * `{ deleteBy: column }` (the rows whose column is the person's id are deleted), `users` (the user
 * row itself, pseudonymised by the users module), or a step of its own.
 */
export type EraseStep = 'keep' | 'users' | { deleteBy: string } | ((db: Db, person: ErasedPerson) => Promise<void>)

export interface TableRule {
  columns: Readonly<Record<string, ColumnRule>>
  erase: EraseStep
}

/** The person an erasure is about, with the identifiers read before anything is cleared. */
export interface ErasedPerson {
  tenantId: number
  userId: number
  username: string
  email: string | null
}

const deleteBy = (column: string) => ({ deleteBy: column })

export const PERSONAL_DATA: Readonly<Record<string, TableRule>> = {
  access_tokens: { columns: { device_name: 'personal', token_hash: 'secret' }, erase: deleteBy('user_id') },
  audit_log: {
    // the action stays, with the actor's id (now the pseudonymised account); the values of records
    // about the person and the IP and user agent of their requests are replaced (the audit module's anonymizeAuditFor)
    columns: {
      action: 'not-personal',
      target_type: 'not-personal',
      target_id: 'not-personal',
      changes: 'personal',
      request_id: 'not-personal',
      ip: 'personal',
      user_agent: 'personal',
      actor: 'not-personal', // `scim:<token id>` or null
    },
    erase: (db, person) => anonymizeAuditFor(db, person.tenantId, person.userId),
  },
  auth_tickets: {
    columns: { kind: 'not-personal', token_hash: 'secret', data: 'personal' },
    erase: deleteBy('user_id'),
  },
  automations: {
    columns: { name: 'not-personal', event: 'not-personal', actions: 'not-personal' },
    erase: 'keep',
  },
  calendar_events: { columns: { title: 'authored' }, erase: 'keep' },
  data_exports: {
    // the archive file itself is deleted by the users module with the row (storage directory)
    columns: { status: 'not-personal', file_name: 'not-personal', error: 'not-personal', link_hash: 'secret' },
    erase: 'users',
  },
  // who opened and confirmed what, and who was reminded (issue 41): about the person, deleted with them
  content_reads: { columns: { target_type: 'not-personal' }, erase: deleteBy('user_id') },
  content_reminder_recipients: { columns: {}, erase: deleteBy('user_id') },
  content_reminders: { columns: { target_type: 'not-personal' }, erase: 'keep' },
  department_users: { columns: {}, erase: deleteBy('user_id') },
  departments: { columns: { name: 'not-personal', external_id: 'not-personal' }, erase: 'keep' },
  domain_events: {
    // user events carry the names of changed fields only, content events their titles
    columns: { type: 'not-personal', subject_type: 'not-personal', subject_id: 'not-personal', data: 'authored' },
    erase: 'keep',
  },
  email_digests: { columns: { period: 'not-personal' }, erase: deleteBy('user_id') },
  entity_permissions: {
    columns: {
      key: 'not-personal',
      permission_entity: 'not-personal',
      target_entity: 'not-personal',
      target_entity_id: 'not-personal',
    },
    // grants naming the person are kept (ids only): a target restricted to them must stay restricted,
    // not become open to everyone because its only grant vanished (docs/decisions/users-module.md)
    erase: 'keep',
  },
  filemanager_directories: { columns: { name: 'authored' }, erase: 'keep' },
  filemanager_files: {
    columns: {
      name: 'authored',
      media_type: 'not-personal',
      storage_name: 'not-personal', // random
      poster_storage_name: 'not-personal',
    },
    erase: 'keep',
  },
  folder_translations: { columns: { lang_id: 'not-personal', name: 'not-personal' }, erase: 'keep' },
  folders: { columns: { type: 'not-personal', lang_id: 'not-personal', path: 'not-personal' }, erase: 'keep' },
  form_messages: { columns: { data: 'authored' }, erase: 'keep' },
  forms: { columns: { name: 'authored' }, erase: 'keep' },
  generic_notifications: {
    columns: {
      title: 'authored',
      body: 'authored',
      url: 'authored',
      department_ids: 'not-personal',
      user_ids: 'not-personal',
    },
    erase: 'keep',
  },
  infoboard_comments: { columns: { body: 'authored' }, erase: 'keep' },
  infoboard_posts: { columns: { title: 'authored', body: 'authored' }, erase: 'keep' },
  manual_chapters: { columns: { title: 'authored' }, erase: 'keep' },
  manual_entries: { columns: { title: 'authored', body: 'authored' }, erase: 'keep' },
  notification_preferences: { columns: {}, erase: deleteBy('user_id') },
  notification_settings: { columns: { key: 'not-personal' }, erase: 'keep' },
  notifications: {
    columns: {
      type: 'not-personal',
      notifiable_type: 'not-personal',
      targetable_type: 'not-personal',
      source_key: 'not-personal',
      data: 'personal', // the person's inbox; others' records hold titles of authored content
    },
    erase: queries.deleteNotificationsOf,
  },
  oidc_identities: { columns: { issuer: 'not-personal', subject: 'personal' }, erase: deleteBy('user_id') },
  oidc_providers: {
    columns: {
      issuer: 'not-personal',
      client_id: 'not-personal',
      client_secret: 'secret',
      scopes: 'not-personal',
      username_claim: 'not-personal',
      email_claim: 'not-personal',
      provisioning: 'not-personal',
      allowed_email_domains: 'not-personal',
      mfa_amr_values: 'not-personal',
      mfa_acr_values: 'not-personal',
    },
    erase: 'keep',
  },
  outbound_messages: {
    columns: {
      channel: 'not-personal',
      status: 'not-personal',
      recipient: 'personal',
      subject: 'personal',
      body_html: 'personal',
      body_text: 'personal',
      payload: 'personal',
    },
    // the person's mail, and any other message sent to their address
    erase: queries.deleteOutboundMessagesOf,
  },
  password_reset_requests: {
    columns: { ip: 'personal' },
    // rows carry an address only: those the person was seen at (before their sessions are deleted)
    erase: queries.deletePasswordResetRequestsSeenWith,
  },
  push_deliveries: {
    columns: { status: 'not-personal', error: 'not-personal' },
    erase: queries.deletePushDeliveriesOf,
  },
  push_subscriptions: {
    columns: { endpoint: 'personal', p256dh: 'secret', auth: 'secret', user_agent: 'personal' },
    erase: deleteBy('user_id'),
  },
  retention_settings: { columns: { data_class: 'not-personal' }, erase: 'keep' },
  reading_settings: { columns: { reach_detail: 'not-personal' }, erase: 'keep' },
  roles: { columns: { name: 'not-personal', permissions: 'not-personal' }, erase: 'keep' },
  scim_tokens: { columns: { name: 'not-personal', token_hash: 'secret' }, erase: 'keep' },
  // fair-use counters name tokens and buckets by id, the operator's overrides are numbers (issue 42)
  rate_limit_counters: { columns: { key: 'not-personal' }, erase: 'keep' },
  session_activity: { columns: { user_agent: 'personal', ip: 'personal' }, erase: deleteBy('user_id') },
  shared_item_accesses: {
    columns: { shared_item_id: 'not-personal', outcome: 'not-personal', url_type: 'not-personal' },
    erase: deleteBy('user_id'),
  },
  shared_items: {
    columns: {
      type: 'not-personal',
      redirect_type: 'not-personal',
      targetable_type: 'not-personal',
      targetable_id: 'not-personal',
      config: 'authored',
    },
    erase: 'keep',
  },
  task_executions: { columns: { title: 'authored' }, erase: 'keep' },
  tenant_limits: { columns: { limits: 'not-personal' }, erase: 'keep' },
  // the change feed (issue 43): entity names and ids; a client's view is the ids it holds, per device.
  // A change row with a `user_id` is about that person's own record or reading state (who opened or
  // confirmed what, as content_reads): deleted with them (only they read it, so no cursor misses it)
  sync_clocks: { columns: {}, erase: 'keep' },
  sync_changes: { columns: { entity: 'not-personal', entity_id: 'not-personal' }, erase: deleteBy('user_id') },
  sync_access_changes: { columns: { scope: 'not-personal' }, erase: 'keep' },
  sync_views: { columns: { device: 'personal' }, erase: deleteBy('user_id') },
  sync_view_lists: { columns: { entity: 'not-personal', ids: 'not-personal' }, erase: deleteBy('user_id') },
  user_totp: { columns: { secret: 'secret', recovery_codes: 'secret' }, erase: deleteBy('user_id') },
  users: {
    columns: {
      username: 'personal',
      password_hash: 'secret',
      first_name: 'personal',
      last_name: 'personal',
      lang_id: 'not-personal',
      profile_picture: 'personal',
      street: 'personal',
      zipcode: 'personal',
      city: 'personal',
      email: 'personal',
      phone: 'personal',
      gender: 'personal',
      staff_number: 'personal',
      default_route: 'personal',
      email_digest: 'not-personal',
      external_id: 'personal',
    },
    erase: 'users',
  },
  webhook_deliveries: {
    columns: {
      event_type: 'not-personal',
      event_timestamp: 'not-personal',
      event_data: 'authored', // a domain event's data (see domain_events)
      url: 'not-personal',
      method: 'not-personal',
      status: 'not-personal',
      response_body: 'not-personal',
      error: 'not-personal',
    },
    erase: 'keep',
  },
}

/**
 * Deletes or pseudonymises what the tables hold about the person, except the user row itself (the
 * users module's part): in the caller's transaction, in the order of the declarations above, which
 * read other tables (password_reset_requests reads session_activity) before those are deleted.
 */
export async function erasePersonalData(db: Db, person: ErasedPerson): Promise<void> {
  const steps = Object.entries(PERSONAL_DATA)
  // steps that read the person's other rows run first
  const first = ['password_reset_requests', 'push_deliveries']
  steps.sort(([a], [b]) => Number(first.includes(b)) - Number(first.includes(a)))
  for (const [table, rule] of steps) {
    const step = rule.erase
    if (step === 'keep' || step === 'users') continue
    if (typeof step === 'function') await step(db, person)
    else await queries.deleteRowsOf(db, person.tenantId, table, step.deleteBy, person.userId)
  }
  // queued jobs (e.g. a password reset asked for the typed email address)
  await deleteQueuedJobsNaming(db, person.tenantId, [person.username, person.email ?? ''])
}

/** Column types that can hold a person's data (as information_schema names them). */
const TEXT_LIKE = ['text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY', 'bytea', 'inet', 'USER-DEFINED']

/**
 * Tenant tables without a rule, text-like columns without one, and rules for columns that no longer
 * exist: one line each, empty when every column is classified.
 */
export async function personalDataRuleGaps(db: Db): Promise<string[]> {
  const rows = await queries.selectPublicColumns(db)
  const gaps: string[] = []
  const tenant = new Set(tenantTables())
  for (const table of tenant) {
    const rule = PERSONAL_DATA[table]
    if (!rule) {
      gaps.push(`${table}: no personal-data rule (add it to PERSONAL_DATA in src/modules/users/users-personal-data.ts)`)
      continue
    }
    const columns = rows.filter((r) => r.table === table)
    for (const column of columns)
      if (TEXT_LIKE.includes(column.type) && !Object.hasOwn(rule.columns, column.column))
        gaps.push(`${table}.${column.column}: ${column.type} column without a personal-data rule`)
    for (const declared of Object.keys(rule.columns))
      if (!columns.some((c) => c.column === declared)) gaps.push(`${table}.${declared}: rule for a missing column`)
  }
  for (const table of Object.keys(PERSONAL_DATA))
    if (!tenant.has(table)) gaps.push(`${table}: personal-data rule for a table that is not a tenant table`)
  return gaps
}
