import { isSealed, type SecretHolder } from '../../platform/secrets/secret-box.js'
import * as oidcQueries from './oidc.queries.js'
import * as totpQueries from './totp.queries.js'

/** `workplace secrets rotate`: re-seals the providers' client secrets under the current key. */
export const oidcSecrets: SecretHolder = {
  name: 'oidc_providers',
  async reseal(db, box, scope = {}) {
    const rows = await oidcQueries.selectProviderSecrets(db, scope.tenantId)
    let changed = 0
    for (const row of rows) {
      if (isSealed(row.client_secret) && !box.needsResealing(row.client_secret)) continue
      await oidcQueries.updateProviderSecret(db, row.tenant_id, box.seal(box.open(row.client_secret)))
      changed++
    }
    return changed
  },
}

/** `workplace secrets rotate`: re-seals TOTP secrets under the current key. */
export const totpSecrets: SecretHolder = {
  name: 'user_totp',
  async reseal(db, box, scope = {}) {
    const rows = await totpQueries.selectTotpSecrets(db, scope.tenantId)
    let changed = 0
    for (const row of rows) {
      if (isSealed(row.secret) && !box.needsResealing(row.secret)) continue
      await totpQueries.updateTotpSecret(db, row.tenant_id, row.user_id, box.seal(box.open(row.secret)))
      changed++
    }
    return changed
  },
}
