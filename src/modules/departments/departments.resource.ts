import { sql } from 'kysely'
import { defineResource } from '../../platform/query/resource.js'

export const departmentResource = defineResource({
  name: 'department',
  alias: 'd',
  uniqueKey: 'id',
  defaultSort: ['id'],
  fields: {
    id: { type: 'id' },
    name: { type: 'string' },
    folder_id: { type: 'id' },
    notification_setting_id: { type: 'id' },
    user_ids: {
      type: 'json',
      filterable: false,
      sql: (tenantId: number) =>
        sql`array(select du.user_id from department_users du where du.tenant_id = ${tenantId} and du.department_id = d.id order by du.user_id)`,
    },
    created_at: { type: 'timestamp' },
    updated_at: { type: 'timestamp' },
  },
})
