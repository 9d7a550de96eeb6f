import { columnSecretHolder } from '../../platform/secrets/secret-box.js'
import * as oidcQueries from './oidc.queries.js'
import * as totpQueries from './totp.queries.js'

/** `workplace secrets rotate`: re-seals the providers' client secrets under the current key. */
export const oidcSecrets = columnSecretHolder('oidc_providers', {
  rows: oidcQueries.selectProviderSecrets,
  secretOf: (row) => row.client_secret,
  write: (db, row, sealed) => oidcQueries.updateProviderSecret(db, row.tenant_id, sealed),
})

/** `workplace secrets rotate`: re-seals TOTP secrets under the current key. */
export const totpSecrets = columnSecretHolder('user_totp', {
  rows: totpQueries.selectTotpSecrets,
  secretOf: (row) => row.secret,
  write: (db, row, sealed) => totpQueries.updateTotpSecret(db, row.tenant_id, row.user_id, sealed),
})
