import type { AppDeps } from '../../platform/app-module.js'
import { diff } from '../audit/index.js'
import { actingUserId, type Actor } from '../../platform/auth/actor.js'
import { assertHoldsEvery } from '../../platform/auth/permissions.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { FieldErrorCollector, invalid, notFound } from '../../platform/http/errors.js'
import { secretBoxFor } from '../../platform/secrets/secret-box.js'
import { CALLBACK_PATH } from './oidc-browser.js'
import { describe, discoverProvider, isUnavailable } from './oidc-client.js'
import * as queries from './oidc.queries.js'
import type { OidcSettings, OidcSettingsBody } from './oidc.schemas.js'

/** RFC 8176 methods that are a second factor or several (Entra ID sends `mfa`; Okta `mfa`, `otp`, `hwk`, `swk`…). */
export const DEFAULT_MFA_AMR_VALUES = ['mfa', 'otp', 'hwk', 'swk', 'fido', 'sc']

export type OidcSettingsService = ReturnType<typeof createOidcSettingsService>

/** The tenant's OpenID Connect provider, as its administrators set it (tenant.administrate). */
export function createOidcSettingsService({ db, config }: AppDeps) {
  const box = secretBoxFor(config.secrets)
  const redirectUri = `${config.baseUrl}${CALLBACK_PATH}`

  function present(row: queries.ProviderRow): OidcSettings {
    return {
      issuer: row.issuer,
      client_id: row.client_id,
      client_secret_set: row.client_secret !== '',
      scopes: row.scopes,
      username_claim: row.username_claim,
      email_claim: row.email_claim,
      provisioning: row.provisioning,
      default_role_id: row.default_role_id,
      allowed_email_domains: row.allowed_email_domains,
      password_login: row.password_login,
      link_by_verified_email: row.link_by_verified_email,
      mfa_amr_values: row.mfa_amr_values,
      mfa_acr_values: row.mfa_acr_values,
      redirect_uri: redirectUri,
      created_at: row.created_at,
      updated_at: row.updated_at,
    }
  }

  /** The provider's settings (never its secret); 404 without one. */
  async function getSettings(actor: Actor): Promise<OidcSettings> {
    requirePermission(actor, 'tenant.administrate')
    const row = await queries.findProvider(db, actor.tenantId)
    if (!row) throw notFound('OIDC provider')
    return present(row)
  }

  /** Saves the tenant's provider after fetching its discovery document; 422 naming the field otherwise. */
  async function putSettings(actor: Actor, body: OidcSettingsBody): Promise<OidcSettings> {
    requirePermission(actor, 'tenant.administrate')
    const before = await queries.findProvider(db, actor.tenantId)
    const problems = new FieldErrorCollector()
    const secret = body.client_secret ?? (before ? box.open(before.client_secret) : undefined)
    if (secret === undefined) problems.add('client_secret', 'is required when no secret is stored yet')
    const provisioning = body.provisioning ?? before?.provisioning ?? 'off'
    const defaultRoleId = body.default_role_id !== undefined ? body.default_role_id : (before?.default_role_id ?? null)
    if (defaultRoleId !== null) {
      const role = await queries.findRolePermissions(db, actor.tenantId, defaultRoleId)
      if (!role) problems.add('default_role_id', 'is not a role of this tenant')
      // no one grants what they do not hold (issue 33): every provisioned user would get this role
      else if (body.default_role_id !== undefined) assertHoldsEvery(actor, role.permissions, 'default_role_id')
    } else if (provisioning === 'create') problems.add('default_role_id', 'is required when provisioning is "create"')
    const scopes = body.scopes ?? before?.scopes ?? 'openid profile email'
    if (!scopes.split(/\s+/).includes('openid')) problems.add('scopes', 'must include "openid"')
    problems.throwIfAny()
    const issuer = body.issuer
    try {
      await discoverProvider(config, { issuer, client_id: body.client_id, client_secret: secret! })
    } catch (error) {
      const reason = isUnavailable(error) ? (error instanceof Error ? error.message : String(error)) : describe(error)
      throw invalid(
        { issuer: [`discovery failed: ${reason}`] },
        "The issuer's discovery document could not be used",
        'oidc_discovery_failed',
      )
    }
    const values: queries.ProviderValues = {
      issuer,
      client_id: body.client_id,
      client_secret: box.seal(secret!),
      scopes,
      username_claim: body.username_claim ?? before?.username_claim ?? 'preferred_username',
      email_claim: body.email_claim !== undefined ? body.email_claim : (before?.email_claim ?? 'email'),
      provisioning,
      default_role_id: defaultRoleId,
      allowed_email_domains: (body.allowed_email_domains ?? before?.allowed_email_domains ?? []).map((d) =>
        d.toLowerCase(),
      ),
      password_login: body.password_login ?? before?.password_login ?? true,
      link_by_verified_email: body.link_by_verified_email ?? before?.link_by_verified_email ?? false,
      mfa_amr_values: body.mfa_amr_values ?? before?.mfa_amr_values ?? DEFAULT_MFA_AMR_VALUES,
      mfa_acr_values: body.mfa_acr_values ?? before?.mfa_acr_values ?? [],
    }
    await db.transaction().execute(async (trx) => {
      await queries.upsertProvider(trx, actor.tenantId, values)
      const { client_secret: _secret, ...recorded } = values
      const { client_secret: _old, ...previous } = before ?? {}
      const changes = diff(before ? previous : undefined, recorded)
      const secretChanged = body.client_secret !== undefined ? { client_secret_changed: true } : {}
      // the event names the changed fields (never the secret, nor its sealed value)
      await recordDomainEvent(trx, {
        type: before ? 'oidcProvider.updated' : 'oidcProvider.created',
        tenantId: actor.tenantId,
        actorId: actingUserId(actor),
        subjectType: 'oidcProvider',
        subjectId: actor.tenantId,
        data: { changed: Object.keys(changes), ...secretChanged },
        audit: { ...changes, ...secretChanged },
      })
    })
    return getSettings(actor)
  }

  /** Removes the provider: everyone signs in with a password again. */
  async function deleteSettings(actor: Actor): Promise<void> {
    requirePermission(actor, 'tenant.administrate')
    await db.transaction().execute(async (trx) => {
      if (!(await queries.deleteProvider(trx, actor.tenantId))) throw notFound('OIDC provider')
      await recordDomainEvent(trx, {
        type: 'oidcProvider.deleted',
        tenantId: actor.tenantId,
        actorId: actingUserId(actor),
        subjectType: 'oidcProvider',
        subjectId: actor.tenantId,
      })
    })
  }

  return { getSettings, putSettings, deleteSettings }
}
