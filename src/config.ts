import path from 'node:path'

/** Typed, frozen configuration. The only module that reads process.env. */
export interface Config {
  http: { host: string; port: number; bodyLimit: number; corsOrigins: string[] }
  db: { url: string | undefined; dataDir: string }
  storageDir: string
  appUrl: string
  baseUrl: string
  auth: { tokenTtlDays: number; loginMaxFailures: number; loginWindowSeconds: number; actorCache: boolean }
  jobs: { runWorker: boolean; concurrency: number; localQueueSize: number }
  webhooks: { allowPrivateNetworks: boolean }
  smtpUrl: string | undefined
  notificationRetentionDays: number | undefined
  secrets: { key: string | undefined; previousKeys: string[]; keyFile: string }
  auditRetentionDays: number
  logLevel: string
  isTest: boolean
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
  if (/^(true|1|yes)$/i.test(raw)) return true
  if (/^(false|0|no)$/i.test(raw)) return false
  problems.push(`${name} must be true or false`)
  return fallback
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
  const config: Config = {
    http: {
      host,
      port,
      bodyLimit: 1024 * 1024,
      corsOrigins: (env.CORS_ORIGINS || '').split(',').map((s) => s.trim()).filter(Boolean),
    },
    db: { url: env.DATABASE_URL || undefined, dataDir },
    storageDir: path.resolve(env.STORAGE_DIR || path.join(dataDir, 'storage')),
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
    smtpUrl: env.SMTP_URL || undefined,
    notificationRetentionDays: retention ? integer(env, 'NOTIFICATION_RETENTION_DAYS', 0, problems) : undefined,
    secrets: {
      key: env.SECRETS_KEY || undefined,
      previousKeys: (env.SECRETS_PREVIOUS_KEYS || '').split(',').map((s) => s.trim()).filter(Boolean),
      keyFile: path.join(dataDir, 'secrets.key'),
    },
    auditRetentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 365, problems),
    logLevel: env.LOG_LEVEL || 'info',
    isTest: env.NODE_ENV === 'test',
  }
  if (config.secrets.key && Buffer.from(config.secrets.key, 'base64').length !== 32) problems.push('SECRETS_KEY must be 32 bytes, base64-encoded')
  if (problems.length > 0) throw new Error(`Invalid configuration:\n- ${problems.join('\n- ')}`)
  return Object.freeze(config)
}
