import assert from 'node:assert/strict'
import fs from 'node:fs/promises'
import path from 'node:path'
import { test } from 'node:test'

const root = path.resolve(import.meta.dirname, '..')
const src = path.join(root, 'src')

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await sourceFiles(full)))
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) out.push(full)
  }
  return out
}

async function imports(file: string): Promise<string[]> {
  const text = await fs.readFile(file, 'utf8')
  return [...text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) =>
    path.resolve(path.dirname(file), m[1]),
  )
}

test('platform code never imports modules', async () => {
  const offenders: string[] = []
  for (const file of await sourceFiles(path.join(src, 'platform'))) {
    for (const target of await imports(file))
      if (target.startsWith(path.join(src, 'modules'))) offenders.push(path.relative(root, file))
  }
  assert.deepEqual(offenders, [])
})

test('a module reaches another module only through its index.ts', async () => {
  const offenders: string[] = []
  const modulesDir = path.join(src, 'modules')
  for (const file of await sourceFiles(modulesDir)) {
    const own = path.relative(modulesDir, file).split(path.sep)[0]
    for (const target of await imports(file)) {
      if (!target.startsWith(modulesDir + path.sep)) continue
      const [other, ...rest] = path.relative(modulesDir, target).split(path.sep)
      if (other !== own && rest.join('/') !== 'index.js' && rest.length > 0)
        offenders.push(`${path.relative(root, file)} → modules/${other}/${rest.join('/')}`)
    }
  }
  assert.deepEqual(offenders, [])
})

test('only src/config.ts reads process.env', async () => {
  const offenders: string[] = []
  for (const file of await sourceFiles(src)) {
    if (file === path.join(src, 'config.ts')) continue
    if (/process\.env/.test(await fs.readFile(file, 'utf8'))) offenders.push(path.relative(root, file))
  }
  assert.deepEqual(offenders, [])
})

test('the driver basement has one door: outside src/platform/db nothing imports db/driver/', async () => {
  const db = path.join(src, 'platform', 'db')
  const driver = path.join(db, 'driver')
  const offenders: string[] = []
  for (const file of await sourceFiles(src)) {
    if (file.startsWith(db + path.sep)) continue
    for (const target of await imports(file))
      if (target.startsWith(driver + path.sep)) offenders.push(path.relative(root, file))
  }
  assert.deepEqual(offenders, [])
})

test('only the driver basement touches pg-cursor (its internals are patched there, driver/README.md)', async () => {
  const driver = path.join(src, 'platform', 'db', 'driver')
  const offenders: string[] = []
  for (const file of await sourceFiles(src))
    if (!file.startsWith(driver + path.sep) && /from 'pg-cursor'/.test(await fs.readFile(file, 'utf8')))
      offenders.push(path.relative(root, file))
  assert.deepEqual(offenders, [])
})
