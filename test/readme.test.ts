import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { after, before, test } from 'node:test'
import { startFreshServer, type FreshServer } from './helpers/fresh-server.js'

/**
 * Docs that cannot rot: the README's "First requests" shell blocks run, as written, against a fresh
 * server (placeholders filled from its start banner). Each command must succeed and its output keep the
 * shape recorded in test/fixtures/readme-first-requests.json (`UPDATE_README_SHAPES=1` rewrites it
 * after an intended change).
 */
const root = path.resolve(import.meta.dirname, '..')
const SHAPES = path.join(root, 'test/fixtures/readme-first-requests.json')
const DOCUMENTED_BASE = 'http://127.0.0.1:3000'
const SEPARATOR = '\x1e'

/** The commands of the ```sh blocks between "## First requests" and the next level-2 heading. */
export function firstRequestCommands(readme: string): string[] {
  const start = readme.indexOf('\n## First requests')
  assert.ok(start >= 0, 'README has a "First requests" section')
  const end = readme.indexOf('\n## ', start + 1)
  const section = readme.slice(start, end < 0 ? undefined : end)
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1])
  const commands: string[] = []
  for (const block of blocks) {
    let current = ''
    for (const line of block.split('\n')) {
      if (current === '' && (line.trim() === '' || line.trim().startsWith('#'))) continue
      current += line.endsWith('\\') ? `${line.slice(0, -1)} ` : line
      if (!line.endsWith('\\')) {
        commands.push(current.trim())
        current = ''
      }
    }
  }
  return commands
}

/**
 * The shape of an output: JSON objects and arrays as their types (an array as the union of its
 * elements' keys and types), anything else (status codes, URLs) verbatim with the base URL and ids masked.
 */
export function shapeOf(output: string, baseUrl: string): unknown {
  const trimmed = output.trim()
  try {
    const parsed = JSON.parse(trimmed)
    if (typeof parsed === 'object' && parsed !== null) return jsonShape(parsed)
  } catch {
    // text
  }
  return trimmed
    .replaceAll(baseUrl, '{base}')
    .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '{uuid}')
    .replace(/\/\d+/g, '/{id}')
}

function mergeShapes(a: unknown, b: unknown): unknown {
  if (a === undefined) return b
  if (typeof a === 'string' && typeof b === 'string')
    return [...new Set([...a.split('|'), ...b.split('|')])].sort().join('|')
  if (isRecord(a) && isRecord(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()
    return Object.fromEntries(keys.map((k) => [k, k in a && k in b ? mergeShapes(a[k], b[k]) : (a[k] ?? b[k])]))
  }
  return a
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function jsonShape(value: unknown): unknown {
  if (value === null) return 'null'
  if (Array.isArray(value)) {
    if (value.length === 0) return ['empty']
    return [value.map(jsonShape).reduce(mergeShapes, undefined)]
  }
  if (typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as object)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, jsonShape(v)]),
    )
  }
  return typeof value
}

let server: FreshServer
before(async () => {
  server = await startFreshServer('readme')
})
after(async () => {
  await server?.close()
})

test('the README "First requests" run against a fresh server and keep their output shape', async () => {
  const readme = await fs.readFile(path.join(root, 'README.md'), 'utf8')
  const commands = firstRequestCommands(readme)
  assert.ok(commands.length >= 5, `found ${commands.length} commands`)
  const fill = (command: string) =>
    command
      .replaceAll(DOCUMENTED_BASE, server.baseUrl)
      .replaceAll('<printed password>', server.password)
      .replaceAll('<shared item id>', server.sharedItemId)
  // one shell, so the token of the login stays set; each command's exit status and output are recorded
  const script = [
    'set -o pipefail',
    ...commands.map((c) => `${fill(c)}\nprintf '\\n${SEPARATOR}%s${SEPARATOR}\\n' "$?"`),
  ].join('\n')
  const { stdout } = await promisify(execFile)('bash', ['-c', script], {
    cwd: root,
    env: { PATH: process.env.PATH },
    timeout: 60_000,
  })
  const parts = stdout.split(new RegExp(`\\n${SEPARATOR}(\\d+)${SEPARATOR}\\n`))
  const results = commands.map((command, i) => ({
    command,
    status: Number(parts[i * 2 + 1]),
    shape: shapeOf(parts[i * 2], server.baseUrl),
  }))
  for (const result of results) assert.equal(result.status, 0, `exit status of: ${result.command}`)

  const shapes = results.map(({ command, shape }) => ({ command, shape }))
  if (process.env.UPDATE_README_SHAPES) await fs.writeFile(SHAPES, JSON.stringify(shapes, null, 2) + '\n')
  const recorded = JSON.parse(await fs.readFile(SHAPES, 'utf8'))
  assert.deepEqual(
    shapes,
    recorded,
    'the README commands or their output shapes changed (UPDATE_README_SHAPES=1 after an intended change)',
  )
})

test('the start banner prints the three requests, and they work as printed', async () => {
  const lines = server.banner
    .split('\n')
    .filter((line) => /^\s+(TOKEN=|curl )/.test(line))
    .map((line) => line.trim())
  assert.equal(lines.length, 3, server.banner)
  const script = `${lines[0]}\n${lines[1]}\necho\n${lines[2]}`
  const { stdout } = await promisify(execFile)('bash', ['-c', script], {
    env: { PATH: process.env.PATH },
    timeout: 30_000,
  })
  const [notifications, opened] = stdout.trim().split('\n')
  const unread = JSON.parse(notifications)
  assert.ok(Array.isArray(unread) && unread.length > 0, 'the employee has unread notifications')
  assert.ok(unread.every((n: { type: string }) => n.type.startsWith('infoboardPost')))
  assert.match(opened, /^302 http:\/\/\S+\/calendar\/events\/\d+$/)
})
