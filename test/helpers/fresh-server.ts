import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { privateTestDatabase } from './test-database.js'

export interface FreshServer {
  baseUrl: string
  /** From the start banner: the demo password and the shared item it offers to open. */
  password: string
  sharedItemId: string
  banner: string
  close(): Promise<void>
}

const root = path.resolve(import.meta.dirname, '../..')

async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * `workplace serve` as a user starts it (bin/workplace.js), on an empty database of its own: it
 * creates the demo tenant and prints the banner. Resolves once the banner is printed and the server answers.
 */
export async function startFreshServer(name: string, env: Record<string, string> = {}): Promise<FreshServer> {
  const database = await privateTestDatabase(name)
  await database.db.destroy()
  const storage = await fs.mkdtemp(path.join(os.tmpdir(), `workplace-${name}-storage-`))
  const port = await freePort()
  const child: ChildProcess = spawn(process.execPath, [path.join(root, 'bin/workplace.js'), 'serve'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: database.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      STORAGE_DIR: storage,
      LOG_LEVEL: 'warn',
      WORKPLACE_FROM_SOURCE: process.env.WORKPLACE_FROM_SOURCE ?? '',
      // test:citus: a statement of a request sent to more than one shard fails
      CITUS_MULTI_SHARD_LOG_LEVEL: process.env.CITUS_MULTI_SHARD_LOG_LEVEL ?? '',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (chunk) => (output += chunk))
  child.stderr!.on('data', (chunk) => (output += chunk))
  const baseUrl = `http://127.0.0.1:${port}`
  const close = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
    await database.close()
    await fs.rm(storage, { recursive: true, force: true })
  }
  try {
    const deadline = Date.now() + 90_000
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}):\n${output}`)
      if (Date.now() > deadline) throw new Error(`the server did not start in time:\n${output}`)
      if (output.includes('API docs:')) {
        const ready = await fetch(`${baseUrl}/health/ready`).then(
          (r) => r.ok,
          () => false,
        )
        if (ready) break
      }
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const password = /password: (\S+)/.exec(output)?.[1]
    const sharedItemId = /\/shared\/([0-9a-f-]{36})/.exec(output)?.[1]
    if (!password || !sharedItemId) throw new Error(`no demo credentials in the banner:\n${output}`)
    return { baseUrl, password, sharedItemId, banner: output, close }
  } catch (error) {
    await close()
    throw error
  }
}
