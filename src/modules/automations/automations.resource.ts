import { type Selectable, sql } from 'kysely'
import type { AutomationsTable } from '../../platform/db/schema.js'
import { defineResource } from '../../platform/query/resource.js'
import { redactWebhookConfig } from './webhook-config.js'

type StoredActions = Selectable<AutomationsTable>['actions']

/** Actions as clients see them: secrets never leave the database (not even in streamed lists). */
export function presentActions(actions: StoredActions | null | undefined) {
  return (actions ?? []).map((a) => ({
    type: a.type,
    config: a.type === 'webhook' ? redactWebhookConfig(a.config) : {},
  }))
}

/** The columns the computed fields read. */
type AutomationRow = { stored_actions: StoredActions | null }

export const automationResource = defineResource<AutomationRow>({
  name: 'automation',
  alias: 'a',
  uniqueKey: 'id',
  defaultSort: ['id'],
  fields: {
    id: { type: 'id' },
    name: { type: 'string' },
    event: { type: 'string' },
    active: { type: 'boolean' },
    actions: {
      type: 'json',
      requires: ['stored_actions'],
      byDefault: true,
      compute: (row) => presentActions(row.stored_actions),
    },
    stored_actions: { type: 'json', sql: sql`a.actions`, internal: true },
    user_id: { type: 'id' },
    created_at: { type: 'timestamp' },
    updated_at: { type: 'timestamp' },
  },
})

export const deliveryResource = defineResource({
  name: 'delivery',
  alias: 'd',
  uniqueKey: 'id',
  defaultSort: ['-id'],
  fields: {
    id: { type: 'id' },
    automation_id: { type: 'id' },
    event_id: { type: 'uuid' },
    event_type: { type: 'string' },
    action_index: { type: 'integer' },
    url: { type: 'string' },
    method: { type: 'string' },
    status: { type: 'string' },
    attempts: { type: 'integer' },
    response_status: { type: 'integer' },
    response_time_ms: { type: 'integer' },
    response_body: { type: 'string', filterable: false, sortable: false },
    error: { type: 'string' },
    next_attempt_at: { type: 'timestamp' },
    created_at: { type: 'timestamp' },
    updated_at: { type: 'timestamp' },
  },
})
