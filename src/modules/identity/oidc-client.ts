import * as client from 'openid-client'
import type { Config } from '../../config.js'
import { AppError } from '../../platform/http/errors.js'
import { SafeHttpClient } from '../../platform/outbound-http/safe-fetch.js'

/** The identity provider could not be reached (or answered garbage): a 502 for the caller. */
export class OidcUnavailableError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'OidcUnavailableError'
  }
}

const TIMEOUT_MS = 10_000
const MAX_RESPONSE_BYTES = 1024 * 1024

let http: { key: boolean; client: SafeHttpClient } | undefined

/**
 * Every request to an identity provider goes through the SSRF guard of webhooks (no private or
 * loopback addresses unless OIDC_ALLOW_PRIVATE_NETWORKS, checked at connect time; no redirects;
 * one deadline; capped body). A network failure becomes an `OidcUnavailableError`.
 */
function guardedFetch(config: Config): client.CustomFetch {
  const allow = config.oidc.allowPrivateNetworks
  if (!http || http.key !== allow)
    http = {
      key: allow,
      client: new SafeHttpClient({
        allowPrivateNetworks: allow,
        timeoutMs: TIMEOUT_MS,
        maxResponseBytes: MAX_RESPONSE_BYTES,
        connectionsPerOrigin: 4,
      }),
    }
  const safe = http.client
  return async (url, options) => {
    const body = options.body
    const result = await safe.send(url, {
      method: options.method,
      headers: options.headers,
      body: body === undefined || body === null ? undefined : Buffer.from(String(body)),
    })
    if (result.kind === 'error')
      throw new OidcUnavailableError(`the identity provider could not be reached (${result.error}): ${result.message}`)
    if (result.truncated) throw new OidcUnavailableError('the identity provider answered more than 1 MiB')
    const headers = new Headers()
    for (const [name, value] of Object.entries(result.headers)) {
      if (Array.isArray(value)) for (const v of value) headers.append(name, v)
      else if (value !== undefined) headers.set(name, value)
    }
    const status = result.status
    const noBody = status === 204 || status === 304 || (status >= 100 && status < 200)
    return new Response(noBody ? null : new Uint8Array(result.body), { status, headers })
  }
}

/** Whether `error` (or one of its causes) is a failure to reach the provider. */
export function isUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 6; depth++) {
    if (e instanceof OidcUnavailableError) return true
    e = e instanceof Error ? e.cause : undefined
  }
  return false
}

/** 502 `oidc_provider_unavailable`: the provider could not be reached. */
export const unavailable = (error: unknown) =>
  new AppError(
    502,
    'oidc_provider_unavailable',
    `The identity provider cannot be reached: ${error instanceof Error ? error.message : String(error)}`,
  )

/** An openid-client error in a line (its code and message), for a 401/422 or the audit log. */
export const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error).slice(0, 300)
  const code =
    'error' in error && typeof error.error === 'string' ? error.error : 'code' in error ? error.code : undefined
  return `${typeof code === 'string' ? `${code}: ` : ''}${error.message}`.slice(0, 300)
}

export interface ProviderSettings {
  issuer: string
  client_id: string
  client_secret: string
}

/**
 * Discovers the provider (`/.well-known/openid-configuration`, whose `issuer` must equal the
 * configured one) and returns the client configuration: ID token signatures are verified against
 * the provider's JWKS (`enableNonRepudiationChecks`); client authentication by `client_secret_basic`
 * unless the provider only offers `client_secret_post`.
 */
export async function discoverProvider(config: Config, settings: ProviderSettings): Promise<client.Configuration> {
  const execute = [client.enableNonRepudiationChecks]
  if (config.oidc.allowPrivateNetworks) execute.push(client.allowInsecureRequests)
  const configuration = await client.discovery(
    new URL(settings.issuer),
    settings.client_id,
    { client_secret: settings.client_secret },
    undefined,
    { [client.customFetch]: guardedFetch(config), execute, timeout: TIMEOUT_MS / 1000 },
  )
  const methods = configuration.serverMetadata().token_endpoint_auth_methods_supported
  const basic = !methods || methods.includes('client_secret_basic') || !methods.includes('client_secret_post')
  const auth = basic
    ? client.ClientSecretBasic(settings.client_secret)
    : client.ClientSecretPost(settings.client_secret)
  const final = new client.Configuration(
    configuration.serverMetadata(),
    settings.client_id,
    { client_secret: settings.client_secret },
    auth,
  )
  final[client.customFetch] = guardedFetch(config)
  final.timeout = TIMEOUT_MS / 1000
  for (const step of execute) step(final)
  return final
}

export { client }
