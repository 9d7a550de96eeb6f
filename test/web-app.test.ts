import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { gunzipSync } from 'node:zlib'
import { test } from 'node:test'
import Fastify from 'fastify'
import { registerWebApp } from '../src/platform/http/web-app.js'

function built(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'web-app-'))
  fs.mkdirSync(path.join(dir, 'assets'))
  fs.writeFileSync(
    path.join(dir, 'index.html'),
    '<!doctype html><script type="module" src="/app/assets/index-abc.js"></script>',
  )
  fs.writeFileSync(path.join(dir, 'assets/index-abc.js'), `console.log(${JSON.stringify('x'.repeat(2000))})`)
  fs.writeFileSync(path.join(dir, 'sw.js'), 'self.addEventListener("push", () => {})')
  return dir
}

test('the web app: pages answer index.html with a CSP, hashed assets are immutable and gzipped, unknown files 404', async () => {
  const app = Fastify()
  registerWebApp(app, built())
  for (const url of ['/app', '/app/', '/app/inbox', '/app/admin/users/12?next=1', '/app/reset-password?token=x']) {
    const page = await app.inject({ url })
    assert.equal(page.statusCode, 200, url)
    assert.match(page.headers['content-type'] as string, /^text\/html/)
    assert.equal(page.headers['cache-control'], 'no-cache')
    assert.match(page.headers['content-security-policy'] as string, /script-src 'self'/)
    // login codes and reset tokens travel in the app's URLs (issue 39)
    assert.equal(page.headers['referrer-policy'], 'no-referrer', url)
    assert.match(page.body, /index-abc\.js/)
  }
  const asset = await app.inject({ url: '/app/assets/index-abc.js', headers: { 'accept-encoding': 'gzip, br' } })
  assert.equal(asset.statusCode, 200)
  assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable')
  assert.equal(asset.headers['content-encoding'], 'gzip')
  assert.match(gunzipSync(asset.rawPayload).toString(), /^console\.log/)
  const plain = await app.inject({ url: '/app/assets/index-abc.js' })
  assert.equal(plain.headers['content-encoding'], undefined)
  assert.match(plain.body, /^console\.log/)
  const worker = await app.inject({ url: '/app/sw.js' })
  assert.equal(worker.headers['cache-control'], 'no-cache')
  assert.equal((await app.inject({ url: '/app/assets/missing.js' })).statusCode, 404)
  assert.equal((await app.inject({ url: '/app/%E0%A4%A' })).statusCode, 400)
  assert.equal((await app.inject({ url: '/apple' })).statusCode, 404, 'only /app and below')
  await app.close()
})

test('the web app not built: /app says how to build it', async () => {
  const app = Fastify()
  registerWebApp(app, fs.mkdtempSync(path.join(os.tmpdir(), 'web-app-empty-')))
  const res = await app.inject({ url: '/app/inbox' })
  assert.equal(res.statusCode, 404)
  assert.match(res.body, /npm run build:web/)
  await app.close()
})
