import { sql } from 'kysely'
import type { SecretHolder } from '../../platform/secrets/secret-box.js'
import { mapWebhookSecrets } from './webhook-config.js'

const BATCH = 500

/**
 * Re-seals the webhook credentials of every automation under the current secrets key (values stored
 * before encryption included). A row changed meanwhile by the API is left alone: the API sealed it.
 */
export const automationSecrets: SecretHolder = {
  name: 'automations',
  async reseal(db, box, scope = {}) {
    let changed = 0
    let after: [number, number] = [0, 0]
    for (;;) {
      const rows = await db
        .selectFrom('automations')
        .select(['tenant_id', 'id', 'actions'])
        .where(sql<boolean>`(tenant_id, id) > (${after[0]}, ${after[1]})`)
        .$if(scope.tenantId !== undefined, (q) => q.where('tenant_id', '=', scope.tenantId!))
        .orderBy('tenant_id')
        .orderBy('id')
        .limit(BATCH)
        .execute()
      if (rows.length === 0) return changed
      after = [rows.at(-1)!.tenant_id, rows.at(-1)!.id]
      for (const row of rows) {
        let stale = false
        const actions = row.actions.map((action) =>
          action.type !== 'webhook'
            ? action
            : {
                ...action,
                config: mapWebhookSecrets(action.config, (value) => {
                  if (!box.needsResealing(value)) return value
                  stale = true
                  return box.seal(box.open(value))
                }),
              },
        )
        if (!stale) continue
        const updated = await db
          .updateTable('automations')
          .set({ actions: JSON.stringify(actions) })
          .where('tenant_id', '=', row.tenant_id)
          .where('id', '=', row.id)
          .where(sql<boolean>`actions = ${JSON.stringify(row.actions)}::jsonb`)
          .executeTakeFirst()
        changed += Number(updated.numUpdatedRows)
      }
    }
  },
}
