import { spawn, type ChildProcess } from 'node:child_process'
import net from 'node:net'
import path from 'node:path'
import { sql } from 'kysely'
import type { Db } from '../../../src/platform/db/schema.js'
import type { GivenTenant } from '../../helpers/given.js'

const root = path.resolve(import.meta.dirname, '../../..')

export interface Proc {
  child: ChildProcess
  output: () => string
  /** Only standard output: the process's JSON log lines, never split by interleaved stderr. */
  stdout: () => string
  exited: Promise<number | null>
}

/** Starts `node bin/workplace.js <command>` with the given environment (logs collected for failures). */
export function workplace(command: 'serve' | 'worker' | 'migrate', env: Record<string, string>): Proc {
  // as in production: no tsx CLI hooks inherited from the test runner (they turn SIGTERM into exit 143)
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== 'NODE_OPTIONS' && !k.startsWith('TSX_')),
  )
  const child = spawn(process.execPath, ['bin/workplace.js', command], {
    cwd: root,
    env: { ...inherited, LOG_LEVEL: 'warn', NODE_ENV: 'production', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let log = ''
  let out = ''
  child.stdout!.on('data', (d) => {
    log = (log + d).slice(-2_000_000)
    out = (out + d).slice(-2_000_000)
  })
  child.stderr!.on('data', (d) => {
    log = (log + d).slice(-2_000_000)
  })
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))),
  )
  return { child, output: () => log, stdout: () => out, exited }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs: number,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe().catch(() => undefined)
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

/** `count` users in one new department, inserted set-based (one statement each). */
export async function seedDepartment(db: Db, tenant: GivenTenant, count: number): Promise<number> {
  const dept = await db
    .insertInto('departments')
    .values({ tenant_id: tenant.id, name: `big-${count}` })
    .returning('id')
    .executeTakeFirstOrThrow()
  await sql`
    with created as (
      insert into users (tenant_id, username, password_hash, first_name, last_name, role_id, lang_id)
      select ${tenant.id}, 'bulk-' || ${dept.id}::text || '-' || g, 'not-a-hash', 'Bulk', 'User ' || g, ${tenant.employeeRoleId}, 'en-US'
      from generate_series(1, ${count}) g
      returning id
    )
    insert into department_users (tenant_id, department_id, user_id) select ${tenant.id}, ${dept.id}, id from created`.execute(
    db,
  )
  return dept.id
}
