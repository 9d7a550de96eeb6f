import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import path from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { buildTestApp } from './helpers/build-test-app.js'
import { testDatabaseUrl } from './helpers/test-database.js'

const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '..')
/** Runs the CLI; a non-zero exit is returned, not thrown. A command that would serve is killed after 20 s. */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(root, 'bin/workplace.js'), ...args], {
      cwd: root,
      timeout: 20_000,
      env: { ...process.env, DATABASE_URL: testDatabaseUrl(), LOG_LEVEL: 'silent', PORT: '1' },
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

test('CLI: help, per-command --help and usage errors never start anything', async () => {
  const table: Array<[string[], number, RegExp]> = [
    [[], 0, /^Usage: workplace <command>/],
    [['serve', '--help'], 0, /^Usage: workplace serve\n/],
  ]
  for (const [args, code, output] of table) {
    const res = await cli(args)
    assert.equal(res.code, code, `${args.join(' ')}: ${res.stderr}`)
    assert.match(res.stdout, output, args.join(' '))
  }
  for (const args of [['bogus'], ['tenant', 'create', 'x', '--bogus']]) {
    const res = await cli(args)
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stdout}${res.stderr}`)
    assert.match(res.stderr, /Usage: workplace/, args.join(' '))
    assert.equal(res.stdout, '')
  }
})

test('CLI: a generated admin password is printed once, in --json as admin.password, and it logs in', async () => {
  const slug = `gen-${Date.now().toString(36)}`
  const res = await cli(['tenant', 'create', slug, '--json'])
  assert.equal(res.code, 0, res.stderr)
  const printed = JSON.parse(res.stdout)
  assert.deepEqual(Object.keys(printed.admin), ['id', 'username', 'password'])
  const app = await buildTestApp()
  const login = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { tenant: slug, username: 'admin', password: printed.admin.password },
  })
  assert.equal(login.statusCode, 200, login.body)
})
