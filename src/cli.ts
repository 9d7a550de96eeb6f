import { parseArgs } from 'node:util'
import pino from 'pino'
import { loadConfig, type Config } from './config.js'
import { openRuntimeDatabase } from './runtime.js'
import { AppError } from './platform/http/errors.js'
import { issueAccessToken } from './platform/auth/tokens.js'
import { rotateSigningKey } from './platform/keys/signing-keys.js'
import { secretBoxFor } from './platform/secrets/secret-box.js'
import { rotateSecrets } from './platform/secrets/rotate-secrets.js'
import { appModules } from './modules/index.js'
import { createTenant, ensureDemoTenant, findTenantBySlug } from './modules/tenants/index.js'

const USAGE = `Usage: workplace <command>

  serve                                   migrate, serve HTTP and run the job worker (npm start)
  worker                                  run the job worker only
  migrate                                 apply migrations and exit
  tenant create <slug> [--name N] [--admin-username U] [--admin-password P] [--json]
  token create --tenant <slug> --username <u> [--json]
  demo                                    create the demo tenant if missing
  keys rotate                             new signing key (JWKS keeps the previous one)
  secrets rotate                          new secrets key (key-file mode) and every stored secret re-encrypted under it
`

async function withDatabase<T>(config: Config, run: (db: Awaited<ReturnType<typeof openRuntimeDatabase>>['db']) => Promise<T>): Promise<T> {
  const log = pino({ level: config.logLevel === 'info' ? 'warn' : config.logLevel }, pino.destination(2))
  const handle = await openRuntimeDatabase(config, log)
  try {
    return await run(handle.db)
  } finally {
    await handle.close()
  }
}

async function tenantCreate(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { name: { type: 'string' }, 'admin-username': { type: 'string' }, 'admin-password': { type: 'string' }, json: { type: 'boolean' } },
  })
  const slug = positionals[0]
  if (!slug) throw new Error('tenant create needs a <slug>')
  const created = await withDatabase(config, (db) => createTenant(db, {
    slug, name: values.name, adminUsername: values['admin-username'], adminPassword: values['admin-password'], tokenTtlDays: config.auth.tokenTtlDays,
  }))
  if (values.json) {
    process.stdout.write(JSON.stringify({ tenant: created.tenant, admin: created.admin, token: created.token }) + '\n')
    return
  }
  process.stdout.write(`Created tenant ${created.tenant.slug} (id ${created.tenant.id}).\n`)
  process.stdout.write(`Admin: ${created.admin.username}${values['admin-password'] ? '' : `  password: ${created.password}`}\n`)
  process.stdout.write(`Token: ${created.token}\n`)
}

async function tokenCreate(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { tenant: { type: 'string' }, username: { type: 'string' }, json: { type: 'boolean' } } })
  if (!values.tenant || !values.username) throw new Error('token create needs --tenant and --username')
  const token = await withDatabase(config, async (db) => {
    const tenant = await findTenantBySlug(db, values.tenant!)
    if (!tenant) throw new Error(`no tenant "${values.tenant}"`)
    const user = await db.selectFrom('users').select('id').where('tenant_id', '=', tenant.id)
      .where((eb) => eb(eb.fn('lower', ['username']), '=', values.username!.toLowerCase()))
      .where('deleted_at', 'is', null).where('blacked_out_at', 'is', null).executeTakeFirst()
    if (!user) throw new Error(`no user "${values.username}" in tenant "${values.tenant}"`)
    return (await issueAccessToken(db, tenant.id, user.id, config.auth.tokenTtlDays, 'cli')).token
  })
  process.stdout.write(values.json ? JSON.stringify({ token }) + '\n' : `${token}\n`)
}

export async function main(argv: string[]): Promise<void> {
  const [command, sub, ...rest] = argv
  const config = loadConfig()
  switch (command) {
    case 'serve':
    case undefined: {
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
      break
    case 'token':
      if (sub === 'create') return tokenCreate(config, rest)
      break
    case 'keys':
      if (sub === 'rotate') {
        const { kid, previousKid } = await withDatabase(config, (db) => rotateSigningKey(db, secretBoxFor(config.secrets)))
        process.stdout.write(`New signing key ${kid}${previousKid ? ` (previous ${previousKid} stays in the JWKS)` : ''}.\n`)
        return
      }
      break
    case 'secrets':
      if (sub === 'rotate') {
        const holders = appModules.flatMap((m) => m.secretHolders ?? [])
        const result = await withDatabase(config, (db) => rotateSecrets(db, secretBoxFor(config.secrets), holders))
        const counts = Object.entries(result.resealed).map(([name, n]) => `${name}: ${n}`).join(', ')
        process.stdout.write(`${result.generated ? 'New secrets key' : 'Secrets key (SECRETS_KEY)'} ${result.keyId}; re-encrypted ${counts}.\n`)
        return
      }
      break
    case 'demo': {
      const result = await withDatabase(config, (db) => ensureDemoTenant(db, config.auth.tokenTtlDays))
      if (result.tenant) process.stdout.write(`Created the demo tenant: tenant demo, username admin, password ${result.tenant.password}\n`)
      else process.stdout.write('The demo tenant already exists; use `workplace token create --tenant demo --username admin` for a token.\n')
      return
    }
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE)
      return
  }
  process.stderr.write(USAGE)
  process.exitCode = 2
}

main(process.argv.slice(2)).catch((error) => {
  const message = error instanceof AppError ? `${error.message}${error.errors ? ` ${JSON.stringify(error.errors)}` : ''}` : (error as Error).message
  process.stderr.write(`workplace: ${message}\n`)
  process.exit(1)
})
