import { defineResource } from '../../platform/query/resource.js'

export const auditResource = defineResource({
  name: 'audit record',
  alias: 'l',
  uniqueKey: 'id',
  defaultSort: ['-id'],
  fields: {
    id: { type: 'id' },
    created_at: { type: 'timestamp' },
    actor_id: { type: 'id' },
    actor: { type: 'string' },
    action: { type: 'string' },
    target_type: { type: 'string' },
    target_id: { type: 'string' },
    changes: { type: 'json', filterable: false, sortable: false },
    request_id: { type: 'string' },
    ip: { type: 'string' },
    user_agent: { type: 'string' },
  },
})

export const AUDIT_CSV_COLUMNS = [
  'id',
  'created_at',
  'actor_id',
  'actor',
  'action',
  'target_type',
  'target_id',
  'changes',
  'request_id',
  'ip',
  'user_agent',
] as const
