import { isIP } from 'node:net'
import { FieldErrorCollector } from '../../platform/http/errors.js'
import type { SecretBox } from '../../platform/secrets/secret-box.js'
import {
  isBlockedAddress,
  resolveWithSystemDns,
  unbracket,
  type ResolveHost,
} from '../../platform/outbound-http/safe-fetch.js'

export const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
export const WEBHOOK_AUTH_TYPES = ['basic', 'header', 'jwt', 'secret'] as const
export type WebhookMethod = (typeof WEBHOOK_METHODS)[number]
export type WebhookAuthType = (typeof WEBHOOK_AUTH_TYPES)[number]

export interface WebhookAuth {
  type: WebhookAuthType | null
  basic?: { username: string; password: string }
  header?: { name: string; value: string }
  secret?: { secret: string }
}

/**
 * A validated webhook action config (spec "Webhook action configuration", contract 50). A type, not an
 * interface: actions store it as a `Record<string, unknown>`.
 */
export type WebhookConfig = {
  url: string
  method: WebhookMethod | null
  headers: Record<string, string>
  auth: WebhookAuth | null
}

export interface UrlCheckOptions {
  allowPrivateNetworks: boolean
  resolve?: ResolveHost
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
// CR/LF would split the request (header injection); other controls are refused by HTTP parsers anyway
// eslint-disable-next-line no-control-regex -- control characters are what it rejects
const UNSAFE_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/
const MAX_HEADERS = 50
const MAX_VALUE_LENGTH = 8192
/** Names we set ourselves or that would corrupt the framing of the request. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
])
const DNS_TIMEOUT_MS = 3_000

const isAuthType = (value: unknown): value is WebhookAuthType => WEBHOOK_AUTH_TYPES.some((type) => type === value)
const isMethod = (value: unknown): value is WebhookMethod => WEBHOOK_METHODS.some((method) => method === value)

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function checkKeys(value: Record<string, unknown>, allowed: string[], path: string, errors: FieldErrorCollector): void {
  for (const key of Object.keys(value))
    if (!allowed.includes(key)) errors.add(`${path}.${key}`, 'is not an allowed field')
}

function requiredString(
  parent: Record<string, unknown>,
  key: string,
  path: string,
  errors: FieldErrorCollector,
  { nonEmpty = false } = {},
): string | undefined {
  const value = parent[key]
  if (value === undefined || value === null) errors.add(`${path}.${key}`, 'is required')
  else if (typeof value !== 'string') errors.add(`${path}.${key}`, 'must be a string')
  else if (nonEmpty && value.length === 0) errors.add(`${path}.${key}`, 'must not be empty')
  else if (value.length > MAX_VALUE_LENGTH)
    errors.add(`${path}.${key}`, `must be at most ${MAX_VALUE_LENGTH} characters`)
  else return value
  return undefined
}

function checkHeaderName(name: string, path: string, errors: FieldErrorCollector): boolean {
  if (!TOKEN.test(name)) errors.add(path, 'must be a valid HTTP header name')
  else if (RESERVED_HEADERS.has(name.toLowerCase()))
    errors.add(path, `"${name}" is set by the platform and cannot be configured`)
  else return true
  return false
}

function checkHeaderValue(value: string, path: string, errors: FieldErrorCollector): void {
  if (UNSAFE_VALUE.test(value)) errors.add(path, 'must not contain CR, LF or other control characters')
}

/** "Valid active URL": absolute http(s), no credentials, a host that resolves (or an IP literal). */
async function checkUrl(
  value: unknown,
  path: string,
  errors: FieldErrorCollector,
  options: UrlCheckOptions,
): Promise<string | undefined> {
  if (value === undefined || value === null) return void errors.add(path, 'is required')
  if (typeof value !== 'string') return void errors.add(path, 'must be a string')
  if (value.length > 2048) return void errors.add(path, 'must be at most 2048 characters')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return void errors.add(path, 'must be a valid absolute URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return void errors.add(path, 'must use http or https')
  if (url.username || url.password) return void errors.add(path, 'must not contain credentials')
  const host = unbracket(url.hostname)
  if (!host) return void errors.add(path, 'must name a host')
  let addresses: string[]
  if (isIP(host)) addresses = [host]
  else {
    const resolve = options.resolve ?? resolveWithSystemDns
    const timeout = new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('timeout')), DNS_TIMEOUT_MS).unref(),
    )
    try {
      addresses = (await Promise.race([resolve(host), timeout])).map((a) => a.address)
    } catch {
      addresses = []
    }
    if (addresses.length === 0) return void errors.add(path, `host "${host}" does not resolve`)
  }
  if (!options.allowPrivateNetworks && addresses.some(isBlockedAddress)) {
    return void errors.add(path, 'must not point to a loopback, private, link-local or reserved address')
  }
  return value
}

function checkSecret(secret: string, path: string, errors: FieldErrorCollector): void {
  if (!secret.startsWith('whsec_')) return
  const encoded = secret.slice('whsec_'.length)
  if (
    !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) ||
    encoded.length % 4 !== 0 ||
    Buffer.from(encoded, 'base64').length === 0
  ) {
    errors.add(path, 'a whsec_ secret must be followed by base64')
  }
}

function checkAuth(value: unknown, path: string, errors: FieldErrorCollector): WebhookAuth | null | undefined {
  if (value === undefined || value === null) return null
  if (!isPlainObject(value)) return void errors.add(path, 'must be an object or null')
  checkKeys(value, ['type', 'basic', 'header', 'secret'], path, errors)
  const type = value.type ?? null
  if (type !== null && !isAuthType(type)) {
    return void errors.add(`${path}.type`, `must be null or one of ${WEBHOOK_AUTH_TYPES.join(', ')}`)
  }
  // only the sub-object of the chosen type is kept: no unused credentials are stored
  const auth: WebhookAuth = { type }
  if (type === 'basic' || type === 'header' || type === 'secret') {
    const sub = value[type]
    const subPath = `${path}.${type}`
    if (sub === undefined || sub === null) {
      const keys = type === 'basic' ? ['username', 'password'] : type === 'header' ? ['name', 'value'] : ['secret']
      keys.forEach((k) => errors.add(`${subPath}.${k}`, 'is required'))
      return undefined
    }
    if (!isPlainObject(sub)) return void errors.add(subPath, 'must be an object')
    if (type === 'basic') {
      checkKeys(sub, ['username', 'password'], subPath, errors)
      const username = requiredString(sub, 'username', subPath, errors)
      const password = requiredString(sub, 'password', subPath, errors)
      if (username?.includes(':')) errors.add(`${subPath}.username`, 'must not contain ":" (RFC 7617)')
      if (username !== undefined && password !== undefined) auth.basic = { username, password }
    } else if (type === 'header') {
      checkKeys(sub, ['name', 'value'], subPath, errors)
      const name = requiredString(sub, 'name', subPath, errors, { nonEmpty: true })
      const headerValue = requiredString(sub, 'value', subPath, errors)
      const nameOk = name !== undefined && checkHeaderName(name, `${subPath}.name`, errors)
      if (headerValue !== undefined) checkHeaderValue(headerValue, `${subPath}.value`, errors)
      if (nameOk && headerValue !== undefined) auth.header = { name: name!, value: headerValue }
    } else {
      checkKeys(sub, ['secret'], subPath, errors)
      const secret = requiredString(sub, 'secret', subPath, errors, { nonEmpty: true })
      if (secret !== undefined) {
        checkSecret(secret, `${subPath}.secret`, errors)
        auth.secret = { secret }
      }
    }
  }
  return auth
}

/**
 * Validates a webhook action config, adding errors at dotted paths under `path` (e.g.
 * `config.auth.basic.username`). Values are kept verbatim: no template or variable is ever resolved.
 */
export async function validateWebhookConfig(
  config: unknown,
  path: string,
  errors: FieldErrorCollector,
  options: UrlCheckOptions,
): Promise<WebhookConfig | undefined> {
  if (!isPlainObject(config)) return void errors.add(path, 'must be an object')
  const before = Object.keys(errors.errors).length
  checkKeys(config, ['url', 'method', 'headers', 'auth'], path, errors)
  const url = await checkUrl(config.url, `${path}.url`, errors, options)

  const method = config.method ?? null
  if (method !== null && !isMethod(method)) {
    errors.add(`${path}.method`, `must be null or one of ${WEBHOOK_METHODS.join(', ')}`)
  }

  const headers: Record<string, string> = {}
  if (!('headers' in config) || config.headers === undefined) errors.add(`${path}.headers`, 'is required')
  else if (!isPlainObject(config.headers))
    errors.add(`${path}.headers`, 'must be an object of header name to string value')
  else {
    const entries = Object.entries(config.headers)
    if (entries.length > MAX_HEADERS) errors.add(`${path}.headers`, `must have at most ${MAX_HEADERS} headers`)
    const seen = new Set<string>()
    for (const [name, value] of entries) {
      const at = `${path}.headers.${name}`
      if (!checkHeaderName(name, at, errors)) continue
      if (seen.has(name.toLowerCase())) errors.add(at, 'is given twice (header names are case-insensitive)')
      seen.add(name.toLowerCase())
      if (typeof value !== 'string') errors.add(at, 'must be a string')
      else if (value.length > MAX_VALUE_LENGTH) errors.add(at, `must be at most ${MAX_VALUE_LENGTH} characters`)
      else {
        checkHeaderValue(value, at, errors)
        headers[name] = value
      }
    }
  }

  const auth = checkAuth(config.auth, `${path}.auth`, errors)
  if (Object.keys(errors.errors).length > before || url === undefined || auth === undefined) return undefined
  if (method !== null && !isMethod(method)) return undefined // reported above
  return { url, method, headers, auth }
}

/** The config as shown to clients: every secret value removed (password, header value, signing secret). */
export function redactWebhookConfig(config: Record<string, unknown>): Record<string, unknown> {
  const auth = config.auth
  if (!isPlainObject(auth)) return { ...config, auth: auth ?? null }
  const shown: Record<string, unknown> = { type: auth.type ?? null }
  if (isPlainObject(auth.basic)) shown.basic = { username: auth.basic.username }
  if (isPlainObject(auth.header)) shown.header = { name: auth.header.name }
  if (isPlainObject(auth.secret)) shown.secret = {}
  return { ...config, auth: shown }
}

/**
 * On update, a secret the client leaves out (it never received it) is kept from the stored action
 * at the same index when the action and auth types are unchanged.
 */
export function carryOverSecrets<T>(
  incoming: T,
  stored: { type: string; config: Record<string, unknown> } | undefined,
): T {
  if (!isPlainObject(incoming) || !stored || stored.type !== incoming.type) return incoming
  const config = incoming.config
  const old = stored.config?.auth
  if (!isPlainObject(config) || !isPlainObject(config.auth) || !isPlainObject(old) || config.auth.type !== old.type)
    return incoming
  const type = old.type
  const secretKeys: Record<string, string> = { basic: 'password', header: 'value', secret: 'secret' }
  const secretKey = typeof type === 'string' && Object.hasOwn(secretKeys, type) ? secretKeys[type] : undefined
  if (!secretKey || typeof type !== 'string') return incoming
  const sub = config.auth[type]
  const oldSub = old[type]
  if (!isPlainObject(oldSub) || (sub !== undefined && !isPlainObject(sub))) return incoming
  if (sub !== undefined && sub[secretKey] !== undefined) return incoming
  // for header auth the secret belongs to its header name (oldSub is old.header)
  if (type === 'header' && sub !== undefined && sub.name !== undefined && sub.name !== oldSub.name) return incoming
  const merged = { ...sub, [secretKey]: oldSub[secretKey] }
  if (type === 'basic' && merged.username === undefined) merged.username = oldSub.username
  if (type === 'header' && merged.name === undefined) merged.name = oldSub.name
  return { ...incoming, config: { ...config, auth: { ...config.auth, [type]: merged } } }
}

/** The secret members of a webhook config, mapped through `transform` (seal or open); the rest is kept. */
export function mapWebhookSecrets<T extends { auth?: unknown }>(config: T, transform: (value: string) => string): T {
  const auth = config.auth
  if (!isPlainObject(auth)) return config
  const mapped: Record<string, unknown> = { ...auth }
  if (isPlainObject(auth.basic) && typeof auth.basic.password === 'string')
    mapped.basic = { ...auth.basic, password: transform(auth.basic.password) }
  if (isPlainObject(auth.header) && typeof auth.header.value === 'string')
    mapped.header = { ...auth.header, value: transform(auth.header.value) }
  if (isPlainObject(auth.secret) && typeof auth.secret.secret === 'string')
    mapped.secret = { ...auth.secret, secret: transform(auth.secret.secret) }
  return { ...config, auth: mapped }
}

export const sealWebhookSecrets = <T extends { auth?: unknown }>(config: T, box: SecretBox): T =>
  mapWebhookSecrets(config, (v) => box.seal(v))
export const openWebhookSecrets = <T extends { auth?: unknown }>(config: T, box: SecretBox): T =>
  mapWebhookSecrets(config, (v) => box.open(v))
