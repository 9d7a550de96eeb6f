import type { SecretHolder } from '../../platform/secrets/secret-box.js'
import { mapWebhookSecrets } from './webhook-config.js'
import { automationActionsAfter, replaceAutomationActions } from './automations.queries.js'

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
      const rows = await automationActionsAfter(db, after, scope.tenantId, BATCH)
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
        changed += await replaceAutomationActions(db, row, actions)
      }
    }
  },
}
