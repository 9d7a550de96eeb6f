import { defineResource } from '../../platform/query/resource.js'

export const roleResource = defineResource({
  name: 'role',
  alias: 'r',
  uniqueKey: 'id',
  defaultSort: ['id'],
  fields: {
    id: { type: 'id' },
    name: { type: 'string' },
    permissions: { type: 'json' },
    active: { type: 'boolean' },
    requires_mfa: { type: 'boolean' },
    folder_id: { type: 'id' },
    created_at: { type: 'timestamp' },
    updated_at: { type: 'timestamp' },
  },
})
