import { createWriteStream } from 'node:fs'
import fs from 'node:fs/promises'
import path from 'node:path'
import { parseArgs } from 'node:util'
import pino from 'pino'
import { loadConfig, type Config } from './config.js'
import { openRuntimeDatabase } from './runtime.js'
import { AppError } from './platform/http/errors.js'
import { issueAccessToken } from './platform/auth/tokens.js'
import { rotateSigningKey } from './platform/keys/signing-keys.js'
import { createTenant, demoInstructions, findTenantBySlug } from './modules/tenants/index.js'
import { runDemo } from './demo.js'
import { secretBoxFor } from './platform/secrets/secret-box.js'
import { rotateSecrets } from './platform/secrets/rotate-secrets.js'
import { appModules } from './modules/index.js'
import { composeApp } from './platform/composition.js'
import { thrownFields } from './platform/thrown.js'
import { createScimToken } from './modules/scim/index.js'
import { deleteTenant, exportTenant, importTenant } from './modules/backups/tenant-archive.js'
import { backupDatabase, pruneBackups, restoreDatabase } from './modules/backups/backup.js'
import { loadTenantLimits, writeTenantLimits, type LimitOverrides } from './platform/limits/tenant-limits.js'
import { tenantQuotas } from './platform/limits/quotas.js'

/** One entry per command: its usage line and what it does (`workplace <command> --help` prints it). */
const COMMANDS: Record<string, { usage: string; summary: string }> = {
  serve: { usage: 'serve', summary: 'apply migrations, serve HTTP and run the job worker (npm start)' },
  worker: { usage: 'worker', summary: 'run the job worker only' },
  migrate: { usage: 'migrate', summary: 'apply migrations and exit' },
  tenant: {
    usage:
      'tenant create <slug> [--name N] [--admin-username U] [--admin-password P] [--json]\n  tenant export <slug> --to <file>\n  tenant import <file>\n  tenant delete <slug> --confirm <slug>',
    summary:
      'create a tenant with its administrator (a generated admin password is printed once; --json: admin.password); export one consistent snapshot of a tenant (rows, files, manifest) to a ZIP; import such a ZIP into a database without that tenant; delete a tenant and everything of it (docs/data-protection.md)',
  },
  token: { usage: 'token create --tenant <slug> --username <u> [--json]', summary: 'issue an access token for a user' },
  scim: {
    usage: 'scim token create --tenant <slug> [--name N] [--role-id ID] [--json]',
    summary: 'issue a SCIM token for an identity provider (printed once; docs/scim.md)',
  },
  demo: { usage: 'demo [--reset]', summary: 'create the demo tenant if missing (--reset: delete and recreate it)' },
  keys: { usage: 'keys rotate', summary: 'new signing key (the JWKS keeps the previous one)' },
  db: {
    usage: 'db distribute [--dry-run]',
    summary:
      'on a Citus coordinator: distribute tenant tables by tenant_id, make global ones reference tables (docs/citus.md)',
  },
  secrets: {
    usage: 'secrets rotate',
    summary: 'a new secrets key (key-file mode); every stored secret re-encrypted under it, while the API runs',
  },
  backup: {
    usage: 'backup [--to DIR]',
    summary:
      'a consistent backup (every table in one snapshot, the storage directory, a manifest) as one ZIP in DIR (default BACKUP_DIR); written under a temporary name, renamed when complete; keeps the newest BACKUP_KEEP',
  },
  restore: {
    usage: 'restore <backup.zip>',
    summary:
      'restore a backup into a fresh data directory or database (migrated, no tenant yet) and its storage directory',
  },
  limits: {
    usage:
      'limits show|set --tenant <slug> [--token-read N] [--token-write N] [--token-expensive N] [--tenant-read N] [--tenant-write N] [--tenant-expensive N] [--max-in-flight N] [--max-db-connections N] [--quota-users N] [--quota-automations N] [--quota-push-subscriptions N] [--quota-file-bytes N] [--exempt|--no-exempt]',
    summary:
      "show or set a tenant's fair-use limits (set: replaces the overrides; an option not given = the default; docs/limits.md)",
  },
  help: { usage: 'help [command]', summary: 'print this help' },
}

const USAGE = `Usage: workplace <command> [options]

Commands:
${Object.values(COMMANDS)
  .map((c) => `  ${c.usage}\n      ${c.summary}`)
  .join('\n')}

Every command reads its configuration from the environment (see README, "Configuration").
\`workplace <command> --help\` prints the usage of one command.
`

const commandUsage = (name: string) => `Usage: workplace ${COMMANDS[name]!.usage}\n\n${COMMANDS[name]!.summary}\n`

/** A wrong invocation: the caller prints usage and exits 2. */
class UsageError extends Error {}

async function withDatabase<T>(
  config: Config,
  run: (
    db: Awaited<ReturnType<typeof openRuntimeDatabase>>['db'],
    handle: Awaited<ReturnType<typeof openRuntimeDatabase>>,
  ) => Promise<T>,
): Promise<T> {
  const log = pino({ level: config.logLevel === 'info' ? 'warn' : config.logLevel }, pino.destination(2))
  const handle = await openRuntimeDatabase(config, log)
  composeApp(appModules)
  try {
    return await run(handle.db, handle)
  } finally {
    await handle.close()
  }
}

async function tenantCreate(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      'admin-username': { type: 'string' },
      'admin-password': { type: 'string' },
      json: { type: 'boolean' },
    },
  })
  const slug = positionals[0]
  if (!slug) throw new UsageError('tenant create needs a <slug>')
  const created = await withDatabase(config, (db) =>
    createTenant(db, {
      slug,
      name: values.name,
      adminUsername: values['admin-username'],
      adminPassword: values['admin-password'],
      tokenTtlDays: config.auth.tokenTtlDays,
    }),
  )
  if (values.json) {
    // a generated password exists nowhere else: it is printed once, here (contract 00 §2 shape plus admin.password)
    const admin = values['admin-password'] ? created.admin : { ...created.admin, password: created.password }
    process.stdout.write(JSON.stringify({ tenant: created.tenant, admin, token: created.token }) + '\n')
    return
  }
  process.stdout.write(`Created tenant ${created.tenant.slug} (id ${created.tenant.id}).\n`)
  process.stdout.write(
    `Admin: ${created.admin.username}${values['admin-password'] ? '' : `  password: ${created.password}`}\n`,
  )
  process.stdout.write(`Token: ${created.token}\n`)
}

/** `tenant export <slug> --to <file>`: written to `<file>.partial` and renamed when complete. */
async function tenantExport(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { to: { type: 'string' } } })
  const slug = positionals[0]
  if (!slug || !values.to) throw new UsageError('tenant export needs a <slug> and --to <file>')
  const target = path.resolve(values.to)
  const partial = `${target}.partial`
  const manifest = await withDatabase(config, async (_db, handle) => {
    try {
      return await exportTenant(handle.pool, config.storageDir, slug, createWriteStream(partial, { flags: 'wx' }))
    } catch (error) {
      await fs.rm(partial, { force: true })
      throw error
    }
  })
  await fs.rename(partial, target)
  for (const [table, { rows }] of Object.entries(manifest.tables)) process.stdout.write(`${table}: ${rows}\n`)
  process.stdout.write(
    `Exported tenant ${slug} (schema ${manifest.schema_version}, ${Object.keys(manifest.files).length} files) to ${target}.\n`,
  )
}

async function tenantImport(config: Config, args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} })
  if (!positionals[0]) throw new UsageError('tenant import needs a <file>')
  const result = await withDatabase(config, (_db, handle) =>
    importTenant(handle.pool, config.storageDir, path.resolve(positionals[0]!)),
  )
  for (const [table, rows] of Object.entries(result.tables)) process.stdout.write(`${table}: ${rows}\n`)
  process.stdout.write(`Imported tenant ${result.tenant.slug} (id ${result.tenant.id}, ${result.files} files).\n`)
}

async function tenantDelete(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { confirm: { type: 'string' } } })
  const slug = positionals[0]
  if (!slug) throw new UsageError('tenant delete needs a <slug>')
  if (values.confirm !== slug) throw new UsageError('tenant delete needs --confirm <slug> with the same slug')
  const result = await withDatabase(config, (_db, handle) => deleteTenant(handle.pool, config.storageDir, slug))
  for (const [table, n] of Object.entries(result.deleted)) process.stdout.write(`deleted ${table}: ${n}\n`)
  for (const [table, n] of Object.entries(result.remaining)) process.stdout.write(`remaining ${table}: ${n}\n`)
  const left = Object.values(result.remaining).reduce((a, b) => a + b, 0)
  process.stdout.write(
    left === 0 ? `Tenant ${slug} deleted; nothing of it remains.\n` : `Tenant ${slug}: ${left} rows remain.\n`,
  )
  if (left !== 0) process.exitCode = 1
}

async function tokenCreate(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { tenant: { type: 'string' }, username: { type: 'string' }, json: { type: 'boolean' } },
  })
  if (!values.tenant || !values.username) throw new UsageError('token create needs --tenant and --username')
  const token = await withDatabase(config, async (db) => {
    const tenant = await findTenantBySlug(db, values.tenant!)
    if (!tenant) throw new Error(`no tenant "${values.tenant}"`)
    const user = await db
      .selectFrom('users')
      .select('id')
      .where('tenant_id', '=', tenant.id)
      .where((eb) => eb(eb.fn('lower', ['username']), '=', values.username!.toLowerCase()))
      .where('deleted_at', 'is', null)
      .where('blacked_out_at', 'is', null)
      .executeTakeFirst()
    if (!user) throw new Error(`no user "${values.username}" in tenant "${values.tenant}"`)
    return (await issueAccessToken(db, tenant.id, user.id, config.auth.tokenTtlDays, 'cli')).token
  })
  process.stdout.write(values.json ? JSON.stringify({ token }) + '\n' : `${token}\n`)
}

async function scimTokenCreate(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      tenant: { type: 'string' },
      name: { type: 'string' },
      'role-id': { type: 'string' },
      json: { type: 'boolean' },
    },
  })
  if (!values.tenant) throw new UsageError('scim token create needs --tenant')
  const roleId = values['role-id'] === undefined ? undefined : Number(values['role-id'])
  if (roleId !== undefined && !(Number.isInteger(roleId) && roleId > 0))
    throw new UsageError('--role-id takes a role id')
  const created = await withDatabase(config, async (db) => {
    const tenant = await findTenantBySlug(db, values.tenant!)
    if (!tenant) throw new Error(`no tenant "${values.tenant}"`)
    return createScimToken(db, tenant.id, null, { name: values.name ?? 'SCIM client', default_role_id: roleId })
  })
  const url = `${config.baseUrl}/scim/v2`
  process.stdout.write(
    values.json
      ? JSON.stringify({ id: created.id, token: created.token, url }) + '\n'
      : `SCIM token ${created.id} (printed once): ${created.token}\nTenant URL: ${url}\n`,
  )
}

async function limitsCommand(config: Config, sub: string, args: string[]): Promise<void> {
  const counts = [
    'token-read',
    'token-write',
    'token-expensive',
    'tenant-read',
    'tenant-write',
    'tenant-expensive',
    'max-in-flight',
    'max-db-connections',
    'quota-users',
    'quota-automations',
    'quota-push-subscriptions',
    'quota-file-bytes',
  ] as const
  const { values } = parseArgs({
    args,
    options: {
      tenant: { type: 'string' },
      exempt: { type: 'boolean' },
      'no-exempt': { type: 'boolean' },
      json: { type: 'boolean' },
      ...Object.fromEntries(counts.map((name) => [name, { type: 'string' as const }])),
    },
  })
  if (!values.tenant) throw new UsageError(`limits ${sub} needs --tenant`)
  const count = (name: (typeof counts)[number]): number | undefined => {
    const raw = (values as Record<string, unknown>)[name]
    if (raw === undefined) return undefined
    const value = Number(raw)
    const bound = name.startsWith('max-')
    if (!Number.isSafeInteger(value) || value < (bound ? 1 : 0))
      throw new UsageError(`--${name} takes a ${bound ? 'positive' : 'non-negative'} integer`)
    return value
  }
  const overrides: LimitOverrides = {
    token: { read: count('token-read'), write: count('token-write'), expensive: count('token-expensive') },
    tenant: { read: count('tenant-read'), write: count('tenant-write'), expensive: count('tenant-expensive') },
    max_in_flight: count('max-in-flight'),
    max_db_connections: count('max-db-connections'),
    quotas: {
      users: count('quota-users'),
      automations: count('quota-automations'),
      push_subscriptions: count('quota-push-subscriptions'),
      file_bytes: count('quota-file-bytes'),
    },
  }
  const exempt = values.exempt ? true : values['no-exempt'] ? false : undefined
  const limits = await withDatabase(config, async (db) => {
    const tenant = await findTenantBySlug(db, values.tenant!)
    if (!tenant) throw new Error(`no tenant "${values.tenant}"`)
    if (sub === 'set') await writeTenantLimits(db, tenant.id, overrides, exempt)
    return {
      ...(await loadTenantLimits(db, tenant.id, config.limits)),
      quotas: await tenantQuotas(db, tenant.id, config.limits.quotas),
    }
  })
  process.stdout.write(
    values.json
      ? JSON.stringify({ ...limits, window_seconds: config.limits.windowSeconds }) + '\n'
      : [
          `Limits of ${values.tenant} per ${config.limits.windowSeconds} s window${limits.exempt ? ' (exempt: none applies)' : ''}:`,
          `  per token:  read ${limits.token.read}  write ${limits.token.write}  expensive ${limits.token.expensive}`,
          `  per tenant: read ${limits.tenant.read}  write ${limits.tenant.write}  expensive ${limits.tenant.expensive}`,
          `  in flight per node: ${limits.max_in_flight}  database connections per node: ${limits.max_db_connections}`,
          `  quotas: users ${limits.quotas.users}  automations ${limits.quotas.automations}  push subscriptions ${limits.quotas.push_subscriptions}  file bytes ${limits.quotas.file_bytes}`,
          '',
        ].join('\n'),
  )
}

export async function main(argv: string[]): Promise<void> {
  const [command, sub, ...rest] = argv
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(sub && Object.hasOwn(COMMANDS, sub) ? commandUsage(sub) : USAGE)
    return
  }
  if (!Object.hasOwn(COMMANDS, command)) throw new UsageError(`unknown command "${command}"`)
  // help never needs configuration, a database or a port
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(commandUsage(command))
    return
  }
  const config = loadConfig()
  switch (command) {
    case 'serve': {
      const { serve } = await import('./server.js')
      return serve(config)
    }
    case 'worker': {
      const { serveWorker } = await import('./server.js')
      return serveWorker(config)
    }
    case 'migrate':
      await withDatabase(config, async () => undefined)
      process.stdout.write('Migrations applied.\n')
      return
    case 'tenant':
      if (sub === 'create') return tenantCreate(config, rest)
      if (sub === 'export') return tenantExport(config, rest)
      if (sub === 'import') return tenantImport(config, rest)
      if (sub === 'delete') return tenantDelete(config, rest)
      break
    case 'token':
      if (sub === 'create') return tokenCreate(config, rest)
      break
    case 'limits':
      if (sub === 'show' || sub === 'set') return limitsCommand(config, sub, rest)
      break
    case 'scim':
      if (sub === 'token' && rest[0] === 'create') return scimTokenCreate(config, rest.slice(1))
      break
    case 'keys':
      if (sub === 'rotate') {
        const { kid, previousKid } = await withDatabase(config, (db) =>
          rotateSigningKey(db, secretBoxFor(config.secrets)),
        )
        process.stdout.write(
          `New signing key ${kid}${previousKid ? ` (previous ${previousKid} stays in the JWKS)` : ''}.\n`,
        )
        return
      }
      break
    case 'db':
      if (sub === 'distribute') {
        const { distributeCommand } = await import('./platform/db/distribute.js')
        const dryRun = parseArgs({ args: rest, options: { 'dry-run': { type: 'boolean' } } }).values['dry-run'] === true
        process.exitCode = await withDatabase(config, (db) =>
          distributeCommand(db, { dryRun }, (text) => process.stdout.write(text)),
        )
        return
      }
      break
    case 'secrets':
      if (sub === 'rotate') {
        const holders = appModules.flatMap((m) => m.secretHolders ?? [])
        const result = await withDatabase(config, (db) => rotateSecrets(db, secretBoxFor(config.secrets), holders))
        const counts = Object.entries(result.resealed)
          .map(([name, n]) => `${name}: ${n}`)
          .join(', ')
        process.stdout.write(
          `${result.generated ? 'New secrets key' : 'Secrets key (SECRETS_KEY)'} ${result.keyId}; re-encrypted ${counts}.\n`,
        )
        return
      }
      break
    case 'backup': {
      const to = parseArgs({ args: argv.slice(1), options: { to: { type: 'string' } } }).values.to
      const dir = to ? path.resolve(to) : config.backup.dir
      const file = await withDatabase(config, (_db, handle) => backupDatabase(handle.pool, config.storageDir, dir))
      const pruned = to ? [] : await pruneBackups(dir, config.backup.keep)
      process.stdout.write(
        `Backup written: ${file}${pruned.length > 0 ? ` (removed ${pruned.length} older)` : ''}.\nKeep SECRETS_KEY (or DATA_DIR/secrets.key) beside it, separately: without it the sealed secrets in the backup cannot be read.\n`,
      )
      return
    }
    case 'restore': {
      if (!sub) throw new UsageError('restore needs a <backup.zip>')
      const manifest = await withDatabase(config, (_db, handle) =>
        restoreDatabase(handle.pool, config.storageDir, path.resolve(sub)),
      )
      process.stdout.write(
        `Restored ${Object.values(manifest.tables).reduce((a, t) => a + t.rows, 0)} rows and ${Object.keys(manifest.files).length} files from ${sub}.\n`,
      )
      return
    }
    case 'demo': {
      const reset = parseArgs({ args: argv.slice(1), options: { reset: { type: 'boolean' } } }).values.reset ?? false
      const result = await withDatabase(config, (_db, handle) => runDemo(config, handle, { reset }))
      if (result.created)
        process.stdout.write(
          demoInstructions(`http://${config.http.host}:${config.http.port}`, result).join('\n') + '\n',
        )
      else
        process.stdout.write(
          'The demo tenant already exists; `workplace token create --tenant demo --username anna` prints a token, `workplace demo --reset` recreates it.\n',
        )
      return
    }
  }
  throw new UsageError(`unknown subcommand "${[command, sub].filter(Boolean).join(' ')}"`)
}

main(process.argv.slice(2)).catch((error) => {
  // a wrong invocation (unknown command or option, missing argument) exits 2 with the usage
  if (error instanceof UsageError || thrownFields(error).code?.startsWith('ERR_PARSE_ARGS')) {
    const [command] = process.argv.slice(2)
    process.stderr.write(
      `workplace: ${thrownFields(error).message}\n\n${command && Object.hasOwn(COMMANDS, command) ? commandUsage(command) : USAGE}`,
    )
    process.exit(2)
  }
  const message =
    error instanceof AppError
      ? `${error.message}${error.errors ? ` ${JSON.stringify(error.errors)}` : ''}`
      : thrownFields(error).message
  process.stderr.write(`workplace: ${message}\n`)
  process.exit(1)
})
