/**
 * `npm run web:budget`: the performance budget of the built app (dist/web), gzip level 9.
 * The inbox's JavaScript is what index.html loads before the inbox can render (the entry and the
 * chunks it preloads: the administrator pages are separate chunks); the whole app is every file.
 */
import fs from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { ROOT } from './harness.js'

const DIR = path.join(ROOT, 'dist/web')
const INBOX_JS_BUDGET = 100 * 1024
const APP_BUDGET = 300 * 1024

const gz = (file: string) => gzipSync(fs.readFileSync(path.join(DIR, file)), { level: 9 }).length
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`

const html = fs.readFileSync(path.join(DIR, 'index.html'), 'utf8')
const initial = [...html.matchAll(/(?:src|href)="\/app\/(assets\/[^"]+\.js)"/g)].map((m) => m[1])
const all: string[] = []
const walk = (dir: string) => {
  for (const entry of fs.readdirSync(path.join(DIR, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name)
    if (entry.isDirectory()) walk(rel)
    else all.push(rel)
  }
}
walk('')
const inboxJs = initial.reduce((sum, f) => sum + gz(f), 0)
const whole = all.reduce((sum, f) => sum + gz(f), 0)
console.log(`inbox JavaScript (${initial.join(', ')}): ${kb(inboxJs)} gzip (budget ${kb(INBOX_JS_BUDGET)})`)
console.log(`whole app (${all.length} files): ${kb(whole)} gzip (budget ${kb(APP_BUDGET)})`)
if (initial.length === 0) throw new Error('no script found in dist/web/index.html: run npm run build:web')
if (inboxJs > INBOX_JS_BUDGET || whole > APP_BUDGET) {
  console.error('over the performance budget')
  process.exit(1)
}
