/**
 * `npm test`: prepares a fresh database, migrates it once, then runs node's test runner over every
 * *.test.ts file with TEST_DB_URL pointing at it. Uses TEST_DATABASE_URL's server when set (a
 * throwaway database is created there and dropped afterwards), else a private embedded PostgreSQL.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { dropDatabase } from './helpers/test-database.js'
import { ensureDatabase, startEmbeddedPostgres } from '../src/platform/db/embedded-postgres.js'
import { openDatabase } from '../src/platform/db/database.js'
import { migrateToLatest } from '../src/platform/db/migrate.js'
import { type CapturedStatement, unroutableStatements } from './helpers/routable-statements.js'
import { unroutedOnCitus } from './helpers/routed-on-citus.js'

const root = path.resolve(import.meta.dirname, '..')
// processes the tests spawn (bin/workplace.js) run the sources under test, never a stale dist/ build
process.env.WORKPLACE_FROM_SOURCE = '1'
const args = process.argv.slice(2)
const suite = args[0] === '--suite' ? args[1] : 'unit'
const explicitFiles = args[0] === '--suite' ? args.slice(2) : args

async function listTests(dir: string, pattern: RegExp): Promise<string[]> {
  const found: string[] = []
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory() && entry.name !== 'node_modules') found.push(...(await listTests(full, pattern)))
    else if (pattern.test(entry.name)) found.push(path.relative(root, full))
  }
  return found.sort()
}

async function main(): Promise<number> {
  const database = `wp_test_${Date.now()}_${randomBytes(3).toString('hex')}`
  let url: string
  let cleanup: () => Promise<void>
  if (process.env.TEST_PREPARED_DATABASE_URL) {
    // a database prepared by the caller (test/run-citus.ts: migrated and distributed on a Citus
    // cluster), used as it is and left to the caller
    url = process.env.TEST_PREPARED_DATABASE_URL
    cleanup = async () => {}
    console.log(`# database: prepared by the caller, ${new URL(url).host}${new URL(url).pathname}`)
  } else if (process.env.TEST_DATABASE_URL) {
    const server = new URL(process.env.TEST_DATABASE_URL)
    server.pathname = `/${database}`
    await ensureDatabase(server.toString(), database)
    url = server.toString()
    cleanup = () => dropDatabase(url, database)
    console.log(`# database: external server ${server.host}, throwaway database ${database}`)
  } else {
    // os.tmpdir() is traversable by the unprivileged server user even when the checkout is not
    // one private cluster per run (parallel runs never stop each other's server)
    const dataDir = process.env.TEST_DATA_DIR ?? (await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-api-test-pg-')))
    const server = await startEmbeddedPostgres(dataDir, database)
    url = server.url
    cleanup = async () => {
      await dropDatabase(url, database)
      await server.stop()
      if (!process.env.TEST_DATA_DIR) await fs.rm(dataDir, { recursive: true, force: true })
    }
    console.log(`# database: embedded PostgreSQL in ${dataDir}, database ${database}`)
  }

  console.log(`# node ${process.version}`)
  const handle = await openDatabase({ url, dataDir: '' })
  await migrateToLatest(handle.db, handle.pool)
  await handle.close()

  const pattern =
    suite === 'reliability'
      ? /\.reliability\.ts$/
      : suite === 'cluster'
        ? /\.cluster\.ts$/
        : suite === 'citus'
          ? /\.citus\.ts$/
          : /\.test\.ts$/
  const files =
    explicitFiles.length > 0
      ? explicitFiles
      : [...(await listTests(path.join(root, 'src'), pattern)), ...(await listTests(path.join(root, 'test'), pattern))]
  const storage = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-api-test-storage-'))
  const statementLog = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-api-test-statements-'))
  const code = await new Promise<number>((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--test', `--test-concurrency=${process.env.TEST_CONCURRENCY ?? 2}`, ...files],
      {
        cwd: root,
        stdio: 'inherit',
        env: {
          ...process.env,
          TEST_DB_URL: url,
          NODE_ENV: 'test',
          TEST_STORAGE_DIR: storage,
          STATEMENT_LOG_DIR: statementLog,
        },
      },
    )
    child.on('close', (exitCode) => resolve(exitCode ?? 1))
  })
  const statements = await capturedStatements(statementLog)
  // on Citus the statements are explained on the coordinator, before the caller drops the database
  const routedOnCitus = process.env.TEST_CITUS === '1' ? await checkRoutedOnCitus(url, statements) : 0
  await cleanup().catch((error) => console.error('# cleanup failed:', error))
  await fs.rm(storage, { recursive: true, force: true })
  const routable = (await checkRoutableStatements(statements)) || routedOnCitus
  await fs.rm(statementLog, { recursive: true, force: true })
  return code || routable
}

/** The distinct statements requests sent (test/helpers/routable-statements.ts), each with its first values. */
async function capturedStatements(dir: string): Promise<Map<string, CapturedStatement>> {
  const statements = new Map<string, CapturedStatement>()
  for (const file of await fs.readdir(dir)) {
    for (const line of (await fs.readFile(path.join(dir, file), 'utf8')).split('\n')) {
      if (!line) continue
      const captured = JSON.parse(line) as CapturedStatement
      if (!statements.has(captured.sql)) statements.set(captured.sql, captured)
    }
  }
  return statements
}

/** docs/citus.md: every statement a request sent filters each tenant table by one tenant_id (test/helpers/routable-statements.ts). */
async function checkRoutableStatements(captured: Map<string, CapturedStatement>): Promise<number> {
  const statements = new Set(captured.keys())
  const offenders = await unroutableStatements(statements)
  console.log(
    `# routable statements: ${statements.size} distinct statements sent by requests, ${offenders.length} not routed to one tenant`,
  )
  for (const offender of offenders)
    console.log(`# not routable (${offender.tables.join(', ')}): ${offender.sql.slice(0, 400)}`)
  return offenders.length > 0 ? 1 : 0
}

/** docs/citus.md: on Citus every statement a request sent is routed whole to one worker (test/helpers/routed-on-citus.ts). */
async function checkRoutedOnCitus(url: string, captured: Map<string, CapturedStatement>): Promise<number> {
  const { explained, unrouted, pending } = await unroutedOnCitus(url, captured.values())
  console.log(
    `# routed on Citus: ${explained} distinct reads and writes explained on the coordinator, ${unrouted.length} not routed whole to one worker, ${pending.length} known and listed (NOT_YET_ROUTED_WHOLE)`,
  )
  for (const statement of pending)
    console.log(
      `# not yet routed whole, listed (${statement.name}; ${statement.why.join('; ')}): ${statement.sql.slice(0, 200)}`,
    )
  for (const statement of unrouted)
    console.log(`# not routed whole (${statement.why.join('; ')}): ${statement.sql.slice(0, 400)}`)
  return unrouted.length > 0 ? 1 : 0
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error)
    process.exit(1)
  },
)
