import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { permissionsPage } from '../scripts/permissions-doc.js'

const root = path.resolve(import.meta.dirname, '..')

test('docs/permissions.md is what the code generates (npm run docs:permissions)', () => {
  assert.equal(fs.readFileSync(path.join(root, 'docs', 'permissions.md'), 'utf8'), permissionsPage())
})

test('README and docs/ link only to files inside the repository (or the local server)', () => {
  const pages = [
    'README.md',
    ...fs
      .readdirSync(path.join(root, 'docs'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.md'))
      .map((f) => path.join('docs', f)),
  ]
  for (const page of pages) {
    const text = fs.readFileSync(path.join(root, page), 'utf8')
    assert.doesNotMatch(text, /\.\.\/shared\//, `${page} refers to a file outside the repository`)
    const targets = [...text.matchAll(/\]\(([^)\s]+)\)|<(https?:[^>]+)>/g)].map((m) => m[1] ?? m[2]!)
    for (const target of targets) {
      if (/^https?:\/\/(127\.0\.0\.1|localhost)[:/]/.test(target!)) continue
      assert.doesNotMatch(target!, /^[a-z]+:/i, `${page} links outside: ${target}`)
      const file = path.resolve(path.dirname(path.join(root, page)), target!.split('#')[0]!)
      assert.ok(
        file.startsWith(root + path.sep) && fs.existsSync(file),
        `${page} links to ${target}, not a file of the repository`,
      )
    }
  }
})
