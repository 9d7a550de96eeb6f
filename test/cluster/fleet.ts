/**
 * A fleet on this one machine, as operators run it (docs/deployment.md): PgBouncer in transaction mode
 * in front of PostgreSQL, N `workplace serve` nodes with WORKER=false, M `workplace worker` processes,
 * and HAProxy in front of the nodes with active health checks. The configurations are the files in
 * deploy/, their placeholders filled in. Everything listens on 127.0.0.1.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { freePort, waitFor, workplace, type Proc } from '../reliability/support/processes.js'

const root = path.resolve(import.meta.dirname, '../..')

export interface FleetOptions {
  /** A PostgreSQL URL with real sessions, of a migrated database (DATABASE_DIRECT_URL of every process). */
  directUrl: string
  apiNodes: number
  workers: number
  /** Extra environment of every node and worker. */
  env?: Record<string, string>
  /** Overrides of the nodes' DATABASE_DIRECT_URL (the suite's failure demonstrations). */
  nodeDirectUrl?: string
}

interface Daemon {
  child: ChildProcess
  exited: Promise<unknown>
  output: () => string
}

/** Debian installs both daemons in /usr/sbin, which is not on every user's PATH. */
function executable(name: string): string {
  for (const dir of [...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/sbin', '/usr/local/sbin']) {
    const candidate = path.join(dir, name)
    try {
      execFileSync('test', ['-x', candidate])
      return candidate
    } catch {
      /* next */
    }
  }
  throw new Error(`${name} is not installed (Debian: apt-get install ${name})`)
}

function daemon(command: string, args: string[]): Daemon {
  const child = spawn(executable(command), args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let log = ''
  const keep = (d: Buffer) => {
    log = (log + d).slice(-200_000)
  }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  return { child, exited: new Promise((resolve) => child.on('exit', resolve)), output: () => log }
}

function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\$\{([A-Z_0-9]+)\}/g, (_, name: string) => {
    if (!(name in values)) throw new Error(`no value for \${${name}}`)
    return values[name]
  })
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.on('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.on('error', () => resolve(false))
  })

/** PgBouncer refuses to run as root: as root it switches to the `postgres` OS user. */
function unprivilegedUser(): { name: string; uid: number; gid: number } | undefined {
  if (os.userInfo().uid !== 0) return undefined
  return {
    name: 'postgres',
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString()),
  }
}

export interface ApiNode {
  name: string
  port: number
  proc: Proc
}

export class Fleet {
  readonly nodes: ApiNode[] = []
  readonly workers: Proc[] = []
  private pooler?: Daemon
  private proxy?: Daemon
  private constructor(
    private readonly options: FleetOptions,
    private readonly dir: string,
    readonly poolerPort: number,
    readonly proxyPort: number,
    readonly statsPort: number,
  ) {}

  /** The load balancer: the only address clients use. */
  get url(): string {
    return `http://127.0.0.1:${this.proxyPort}`
  }
  /** DATABASE_URL of every node and worker: PgBouncer. */
  get pooledUrl(): string {
    const direct = new URL(this.options.directUrl)
    return `postgres://${direct.username || 'postgres'}@127.0.0.1:${this.poolerPort}${direct.pathname}`
  }

  static async start(options: FleetOptions): Promise<Fleet> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-fleet-'))
    const fleet = new Fleet(options, dir, await freePort(), await freePort(), await freePort())
    try {
      // the rollout's first step (docs/deployment.md): migrations, and the settings pooled connections need
      const migrate = workplace('migrate', { DATABASE_URL: options.directUrl })
      if ((await migrate.exited) !== 0) throw new Error(`workplace migrate failed: ${migrate.output()}`)
      await fleet.startPooler()
      for (let i = 0; i < options.apiNodes; i++)
        fleet.nodes.push({ name: `api${i + 1}`, port: await freePort(), proc: undefined as never })
      await Promise.all(fleet.nodes.map((_, i) => fleet.restartNode(i)))
      for (let i = 0; i < options.workers; i++) fleet.workers.push(fleet.spawnWorker())
      await fleet.startProxy()
      return fleet
    } catch (error) {
      console.error(fleet.diagnostics())
      await fleet.stop()
      throw error
    }
  }

  private env(): Record<string, string> {
    return {
      DATABASE_URL: this.pooledUrl,
      DATABASE_DIRECT_URL: this.options.nodeDirectUrl ?? this.options.directUrl,
      DATABASE_POOL_MODE: 'transaction',
      DATA_DIR: path.join(this.dir, 'data'),
      STORAGE_DIR: path.join(this.dir, 'storage'),
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      ...this.options.env,
    }
  }

  async startPooler(): Promise<void> {
    const direct = new URL(this.options.directUrl)
    const database = direct.pathname.slice(1)
    const server = [
      `host=${direct.hostname}`,
      `port=${direct.port || 5432}`,
      `dbname=${database}`,
      `user=${decodeURIComponent(direct.username || 'postgres')}`,
      ...(direct.password ? [`password=${decodeURIComponent(direct.password)}`] : []),
    ].join(' ')
    const user = unprivilegedUser()
    const ini =
      fill(await fs.readFile(path.join(root, 'deploy/pgbouncer.ini'), 'utf8'), {
        DATABASE_ALIAS: database,
        SERVER_CONNECTION: server,
        PORT: String(this.poolerPort),
        DIR: this.dir,
        // test only: the pooler trusts every client on 127.0.0.1 and logs in to PostgreSQL as configured above
        AUTH_TYPE: 'any',
      }) + (user ? `user = ${user.name}\n` : '')
    const file = path.join(this.dir, 'pgbouncer.ini')
    await fs.writeFile(file, ini, { mode: 0o600 })
    if (user) {
      await fs.chmod(this.dir, 0o711)
      await fs.chown(file, user.uid, user.gid)
      await fs.writeFile(path.join(this.dir, 'pgbouncer.log'), '')
      await fs.chown(path.join(this.dir, 'pgbouncer.log'), user.uid, user.gid)
      // the pid file is written after the switch: a directory of its own that the user owns
    }
    const pidDir = this.dir
    if (user) await fs.chown(pidDir, user.uid, user.gid)
    this.pooler = daemon('pgbouncer', [file])
    await waitFor('PgBouncer to listen', () => portOpen(this.poolerPort), 10_000, 50)
  }

  /** Stops PgBouncer at once (clients' connections drop); `startPooler` brings it back on the same port. */
  async killPooler(): Promise<void> {
    this.pooler?.child.kill('SIGKILL')
    await this.pooler?.exited
    this.pooler = undefined
    await fs.rm(path.join(this.dir, 'pgbouncer.pid'), { force: true })
  }

  private spawnWorker(): Proc {
    return workplace('worker', { ...this.env(), WORKER_CONCURRENCY: '8' })
  }

  async restartNode(index: number): Promise<void> {
    const node = this.nodes[index]
    node.proc = workplace('serve', { ...this.env(), WORKER: 'false', PORT: String(node.port), HOST: '127.0.0.1' })
    await waitFor(
      `${node.name} to be ready`,
      async () => {
        if (node.proc.child.exitCode !== null)
          throw new Error(`${node.name} exited: ${node.proc.output().slice(-2000)}`)
        const response = await fetch(`http://127.0.0.1:${node.port}/health/ready`).catch(() => undefined)
        return response?.status === 200
      },
      // three nodes compiling the sources through tsx at once, on 2 cores shared with other runs (load
      // average 10-20), took more than 60 s
      180_000,
      100,
    ).catch((error) => {
      throw new Error(`${(error as Error).message}\n${node.proc.output().slice(-3000)}`)
    })
  }

  async killNode(index: number): Promise<void> {
    this.nodes[index].proc.child.kill('SIGKILL')
    await this.nodes[index].proc.exited
  }

  async killWorker(index: number): Promise<void> {
    this.workers[index].child.kill('SIGKILL')
    await this.workers[index].exited
  }

  restartWorker(index: number): void {
    this.workers[index] = this.spawnWorker()
  }

  private async startProxy(): Promise<void> {
    const servers = this.nodes.map((n) => `    server ${n.name} 127.0.0.1:${n.port} check`).join('\n')
    const cfg = fill(await fs.readFile(path.join(root, 'deploy/haproxy.cfg'), 'utf8'), {
      BIND: `127.0.0.1:${this.proxyPort}`,
      STATS_BIND: `127.0.0.1:${this.statsPort}`,
      SERVERS: servers,
      ERRORFILE_DIR: path.join(root, 'deploy'),
    })
    const file = path.join(this.dir, 'haproxy.cfg')
    await fs.writeFile(file, cfg)
    this.proxy = daemon('haproxy', ['-f', file, '-db'])
    await waitFor(
      'HAProxy to see every node up',
      async () => {
        if (this.proxy?.child.exitCode !== null) throw new Error(`haproxy exited: ${this.proxy?.output()}`)
        const states = await this.nodeStates()
        return this.nodes.every((n) => states[n.name] === 'UP')
      },
      20_000,
      100,
    )
  }

  /** HAProxy's view of each node: UP, DOWN, or a transition such as "UP 1/2". */
  async nodeStates(): Promise<Record<string, string>> {
    const response = await fetch(`http://127.0.0.1:${this.statsPort}/stats;csv`)
    const lines = (await response.text()).split('\n')
    const header = lines[0].replace(/^# /, '').split(',')
    const [proxyName, serverName, status] = ['pxname', 'svname', 'status'].map((c) => header.indexOf(c))
    const states: Record<string, string> = {}
    for (const line of lines.slice(1)) {
      const cells = line.split(',')
      if (cells[proxyName] === 'api_nodes' && cells[serverName]?.startsWith('api'))
        states[cells[serverName]] = cells[status]
    }
    return states
  }

  async waitForStates(expected: Record<string, string>, timeoutMs = 20_000): Promise<void> {
    await waitFor(
      `HAProxy states ${JSON.stringify(expected)}`,
      async () => {
        const states = await this.nodeStates()
        return Object.entries(expected).every(([name, state]) => states[name] === state)
      },
      timeoutMs,
      100,
    )
  }

  diagnostics(): string {
    return [
      ...this.nodes.filter((n) => n.proc).map((n) => `--- ${n.name}\n${n.proc.output().slice(-1500)}`),
      ...this.workers.map((w, i) => `--- worker${i + 1}\n${w.output().slice(-1500)}`),
      `--- pgbouncer\n${this.pooler?.output().slice(-1500) ?? ''}`,
      `--- haproxy\n${this.proxy?.output().slice(-1500) ?? ''}`,
    ].join('\n')
  }

  async stop(): Promise<void> {
    const procs = [...this.nodes.map((n) => n.proc).filter(Boolean), ...this.workers]
    for (const proc of procs) proc.child.kill('SIGKILL')
    this.proxy?.child.kill('SIGKILL')
    this.pooler?.child.kill('SIGKILL')
    await Promise.all([...procs.map((p) => p.exited), this.proxy?.exited, this.pooler?.exited])
    await fs.rm(this.dir, { recursive: true, force: true })
  }
}
