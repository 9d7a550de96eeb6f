import path from 'node:path'
import { parseBooleanWord } from './platform/text/boolean-words.js'

/** Typed, frozen configuration. The only module that reads process.env. */
export interface Config {
  http: { host: string; port: number; bodyLimit: number; corsOrigins: string[] }
  db: {
    url: string | undefined
    /** For what needs a session of its own (LISTEN, migrations, advisory locks): defaults to `url`. */
    directUrl: string | undefined
    /** `transaction`: `url` is a transaction-mode pooler (no startup options, session SETs or named statements). */
    poolMode: 'session' | 'transaction'
    dataDir: string
    /**
     * CITUS_MULTI_SHARD_LOG_LEVEL: on a Citus coordinator, `citus.multi_task_query_log_level` of the
     * connections that serve requests (`error`: a request's statement sent to more than one shard
     * fails; test:citus runs with it). Unset: Citus's default (`off`).
     */
    citusMultiShardLogLevel: string | undefined
  }
  storageDir: string
  /**
   * BACKUP_DIR (default `$DATA_DIR/backups`) and BACKUP_KEEP: where `workplace backup` writes, how many
   * it keeps; BACKUP_DAILY: the worker also makes one every day (02:15 UTC).
   */
  backup: { dir: string; keep: number; daily: boolean }
  appUrl: string
  baseUrl: string
  auth: { tokenTtlDays: number; loginMaxFailures: number; loginWindowSeconds: number; actorCache: boolean }
  jobs: { runWorker: boolean; concurrency: number; localQueueSize: number }
  webhooks: { allowPrivateNetworks: boolean }
  /** OIDC_ALLOW_PRIVATE_NETWORKS: an identity provider on loopback/private addresses, over http (tests, on-premises). */
  oidc: { allowPrivateNetworks: boolean }
  push: { contact: string; ttlSeconds: number; allowPrivateNetworks: boolean }
  /** Hour (UTC) at which daily and weekly email digests go out. */
  digestHour: number
  smtpUrl: string | undefined
  /** Off unless one is set: GET /metrics with this bearer token, and/or a listener on 127.0.0.1:port. */
  metrics: { token: string | undefined; port: number | undefined }
  notificationRetentionDays: number | undefined
  secrets: { key: string | undefined; previousKeys: string[]; keyFile: string }
  auditRetentionDays: number
  logLevel: string
  /** Fair-use limits (docs/limits.md): rate limits per token and tenant, in-flight requests per tenant and node. */
  limits: LimitsConfig
  /** OPERATOR_TOKEN: the bearer of the operator-only routes (/api/operator/…); unset = those routes answer 404. */
  operatorToken: string | undefined
  /** LOG_FORMAT: `json` lines or `pretty`; unset = pretty on a terminal, JSON otherwise. */
  logFormat: 'json' | 'pretty' | undefined
  isTest: boolean
}

/** Requests per window of one bucket (read, write, expensive). */
export interface BucketLimits {
  read: number
  write: number
  expensive: number
}

/**
 * What one tenant may keep (docs/limits.md): QUOTA_USERS, QUOTA_AUTOMATIONS, QUOTA_PUSH_SUBSCRIPTIONS,
 * QUOTA_FILE_BYTES (the file manager's stored bytes, default 50 GiB).
 */
export interface QuotaLimits {
  users: number
  automations: number
  push_subscriptions: number
  file_bytes: number
}

/** The quotas by name; each is counted by the module owning its rows (`quotaCounters`, platform/limits/quotas.ts). */
export const QUOTA_NAMES: readonly (keyof QuotaLimits)[] = ['users', 'automations', 'push_subscriptions', 'file_bytes']

export interface LimitsConfig {
  /** Quotas per tenant (an operator raises them per tenant). */
  quotas: QuotaLimits
  /** RATE_LIMIT_WINDOW_SECONDS: the length of one rate-limit window (default 60). */
  windowSeconds: number
  /** RATE_LIMIT_TOKEN_{READ,WRITE,EXPENSIVE}: requests per window of one token (user or SCIM token). */
  token: BucketLimits
  /** RATE_LIMIT_TENANT_{READ,WRITE,EXPENSIVE}: requests per window of one tenant, all its tokens together. */
  tenant: BucketLimits
  /** TENANT_MAX_IN_FLIGHT: requests of one tenant a node serves at once; more wait in line (default 32). */
  maxInFlight: number
  /** TENANT_MAX_QUEUED: requests of one tenant waiting on a node; more get 429 at once (default 256). */
  maxQueued: number
  /**
   * TENANT_MAX_DB_CONNECTIONS: the node's pool connections one tenant's requests hold at once; more wait
   * for one. Unset: the tenant's own in-flight bound (TENANT_MAX_IN_FLIGHT or the operator's override), so
   * the in-flight bound is the connection bound and the gate, which costs every request of the node on
   * Node 20 while it makes one wait, stays off until an operator sets it lower.
   */
  maxDbConnections: number | undefined
  /**
   * TENANT_FLOOD_SHARE_PERCENT: while another tenant is active on a node, a tenant whose requests wait in
   * line there gets at most this share of its places' time (default 10; 100: it never yields).
   */
  floodSharePercent: number
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, problems: string[]): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 0) problems.push(`${name} must be a non-negative integer`)
  return value
}

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean, problems: string[]): boolean {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = parseBooleanWord(raw)
  if (value === undefined) problems.push(`${name} must be true or false`)
  return value ?? fallback
}

/** The VAPID subject (RFC 8292): a mailto: or https: URL; by default the API's own base URL. */
function pushContact(raw: string | undefined, baseUrl: string, problems: string[]): string {
  const contact =
    raw ||
    (baseUrl.startsWith('https:')
      ? baseUrl
      : `mailto:webmaster@${new URL(baseUrl).hostname.includes('.') ? new URL(baseUrl).hostname : 'localhost.invalid'}`)
  if (!/^(mailto:|https:)/.test(contact)) problems.push('PUSH_CONTACT must be a mailto: or https: URL')
  return contact
}

function poolMode(env: NodeJS.ProcessEnv, problems: string[]): 'session' | 'transaction' {
  const raw = env.DATABASE_POOL_MODE || 'session'
  if (raw === 'session' || raw === 'transaction') return raw
  problems.push('DATABASE_POOL_MODE must be session or transaction')
  return 'session'
}

function logFormat(env: NodeJS.ProcessEnv, problems: string[]): Config['logFormat'] {
  const raw = env.LOG_FORMAT
  if (raw === undefined || raw === '') return undefined
  if (raw === 'json' || raw === 'pretty') return raw
  problems.push('LOG_FORMAT must be json or pretty')
  return undefined
}

/** Reads and validates the environment once; throws listing every problem. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = []
  const workerConcurrency = integer(env, 'WORKER_CONCURRENCY', 10, problems)
  const host = env.HOST || '127.0.0.1'
  const port = integer(env, 'PORT', 3000, problems)
  const dataDir = path.resolve(env.DATA_DIR || './data')
  const localBase = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  const retention = env.NOTIFICATION_RETENTION_DAYS
  const maxInFlight = integer(env, 'TENANT_MAX_IN_FLIGHT', 32, problems)
  const config: Config = {
    http: {
      host,
      port,
      bodyLimit: 1024 * 1024,
      corsOrigins: (env.CORS_ORIGINS || '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    },
    db: {
      url: env.DATABASE_URL || undefined,
      directUrl: env.DATABASE_DIRECT_URL || env.DATABASE_URL || undefined,
      poolMode: poolMode(env, problems),
      dataDir,
      citusMultiShardLogLevel: citusLogLevel(env, problems),
    },
    storageDir: path.resolve(env.STORAGE_DIR || path.join(dataDir, 'storage')),
    backup: {
      dir: path.resolve(env.BACKUP_DIR || path.join(dataDir, 'backups')),
      keep: integer(env, 'BACKUP_KEEP', 7, problems),
      daily: bool(env, 'BACKUP_DAILY', false, problems),
    },
    appUrl: (env.APP_URL || localBase).replace(/\/+$/, ''),
    baseUrl: (env.BASE_URL || localBase).replace(/\/+$/, ''),
    auth: {
      tokenTtlDays: integer(env, 'TOKEN_TTL_DAYS', 30, problems),
      actorCache: bool(env, 'AUTH_CACHE', true, problems),
      loginMaxFailures: 10,
      loginWindowSeconds: 15 * 60,
    },
    jobs: {
      runWorker: bool(env, 'WORKER', true, problems),
      concurrency: workerConcurrency,
      localQueueSize: integer(env, 'WORKER_LOCAL_QUEUE', workerConcurrency + 1, problems),
    },
    webhooks: { allowPrivateNetworks: bool(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', false, problems) },
    oidc: { allowPrivateNetworks: bool(env, 'OIDC_ALLOW_PRIVATE_NETWORKS', false, problems) },
    push: {
      contact: pushContact(env.PUSH_CONTACT, env.BASE_URL || localBase, problems),
      ttlSeconds: integer(env, 'PUSH_TTL_SECONDS', 86_400, problems),
      allowPrivateNetworks: bool(env, 'PUSH_ALLOW_PRIVATE_NETWORKS', false, problems),
    },
    digestHour: integer(env, 'DIGEST_HOUR', 7, problems),
    smtpUrl: env.SMTP_URL || undefined,
    metrics: {
      token: env.METRICS_TOKEN || undefined,
      port: env.METRICS_PORT ? integer(env, 'METRICS_PORT', 0, problems) : undefined,
    },
    notificationRetentionDays: retention ? integer(env, 'NOTIFICATION_RETENTION_DAYS', 0, problems) : undefined,
    secrets: {
      key: env.SECRETS_KEY || undefined,
      previousKeys: (env.SECRETS_PREVIOUS_KEYS || '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      keyFile: path.join(dataDir, 'secrets.key'),
    },
    auditRetentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 365, problems),
    limits: {
      quotas: {
        users: integer(env, 'QUOTA_USERS', 100_000, problems),
        automations: integer(env, 'QUOTA_AUTOMATIONS', 100, problems),
        push_subscriptions: integer(env, 'QUOTA_PUSH_SUBSCRIPTIONS', 200_000, problems),
        file_bytes: integer(env, 'QUOTA_FILE_BYTES', 50 * 1024 ** 3, problems),
      },
      windowSeconds: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, problems),
      token: {
        read: integer(env, 'RATE_LIMIT_TOKEN_READ', 1200, problems),
        write: integer(env, 'RATE_LIMIT_TOKEN_WRITE', 300, problems),
        expensive: integer(env, 'RATE_LIMIT_TOKEN_EXPENSIVE', 20, problems),
      },
      tenant: {
        read: integer(env, 'RATE_LIMIT_TENANT_READ', 12_000, problems),
        write: integer(env, 'RATE_LIMIT_TENANT_WRITE', 3000, problems),
        expensive: integer(env, 'RATE_LIMIT_TENANT_EXPENSIVE', 100, problems),
      },
      maxInFlight,
      maxQueued: integer(env, 'TENANT_MAX_QUEUED', 256, problems),
      maxDbConnections: env.TENANT_MAX_DB_CONNECTIONS
        ? integer(env, 'TENANT_MAX_DB_CONNECTIONS', 0, problems)
        : undefined,
      floodSharePercent: integer(env, 'TENANT_FLOOD_SHARE_PERCENT', 10, problems),
    },
    operatorToken: env.OPERATOR_TOKEN || undefined,
    logLevel: env.LOG_LEVEL || 'info',
    logFormat: logFormat(env, problems),
    isTest: env.NODE_ENV === 'test',
  }
  if (config.digestHour > 23) problems.push('DIGEST_HOUR must be an hour from 0 to 23')
  if (config.db.poolMode === 'transaction' && !config.db.url)
    problems.push('DATABASE_POOL_MODE=transaction needs DATABASE_URL (the pooler)')
  if (config.secrets.key && Buffer.from(config.secrets.key, 'base64').length !== 32)
    problems.push('SECRETS_KEY must be 32 bytes, base64-encoded')
  if (config.limits.windowSeconds < 1) problems.push('RATE_LIMIT_WINDOW_SECONDS must be at least 1')
  if (config.limits.maxInFlight < 1) problems.push('TENANT_MAX_IN_FLIGHT must be at least 1')
  if (config.limits.maxDbConnections !== undefined && config.limits.maxDbConnections < 1)
    problems.push('TENANT_MAX_DB_CONNECTIONS must be at least 1')
  if (config.limits.floodSharePercent < 1 || config.limits.floodSharePercent > 100)
    problems.push('TENANT_FLOOD_SHARE_PERCENT must be from 1 to 100')
  const fileBytes = config.limits.quotas.file_bytes
  if (Number.isInteger(fileBytes) && !Number.isSafeInteger(fileBytes))
    problems.push('QUOTA_FILE_BYTES must be at most 9007199254740991')
  if (problems.length > 0) throw new Error(`Invalid configuration:\n- ${problems.join('\n- ')}`)
  return Object.freeze(config)
}

const CITUS_LOG_LEVELS = ['off', 'debug', 'log', 'info', 'notice', 'warning', 'error']

function citusLogLevel(env: NodeJS.ProcessEnv, problems: string[]): string | undefined {
  const value = env.CITUS_MULTI_SHARD_LOG_LEVEL?.toLowerCase()
  if (!value) return undefined
  if (!CITUS_LOG_LEVELS.includes(value))
    problems.push(`CITUS_MULTI_SHARD_LOG_LEVEL must be one of ${CITUS_LOG_LEVELS.join(', ')}`)
  return value
}
