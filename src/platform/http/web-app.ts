import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

/**
 * The web app (web/, built by `npm run build:web` into dist/web) served at /app on the API's own
 * origin. Every file is read and gzipped once, when the server starts: a request under /app is a
 * map lookup, and no route outside /app sees any of it (no hook, no static-file plugin in front of
 * the API). Hashed assets are immutable; index.html and the service worker are revalidated. Any
 * other path under /app without a file extension is a page of the single-page app: index.html.
 */
export const WEB_APP_PREFIX = '/app'

/** src/platform/http and dist/platform/http are both three levels below the package root. */
export const WEB_APP_DIR = fileURLToPath(new URL('../../../dist/web/', import.meta.url))

interface StaticFile {
  body: Buffer
  gzip?: Buffer
  type: string
  cache: string
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
}

/** Same origin only: scripts, styles, API calls and pictures from /app and /api; no inline script. */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "worker-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ')

function readFiles(root: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>()
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) {
        walk(full)
        continue
      }
      const rel = '/' + path.relative(root, full).split(path.sep).join('/')
      const type = TYPES[path.extname(entry.name)] ?? 'application/octet-stream'
      const body = fs.readFileSync(full)
      const compressible = /^(text\/|application\/(json|manifest)|image\/svg)/.test(type) && body.length > 512
      const cache = rel.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache'
      files.set(rel, { body, gzip: compressible ? gzipSync(body, { level: 9 }) : undefined, type, cache })
    }
  }
  walk(root)
  return files
}

function send(request: FastifyRequest, reply: FastifyReply, file: StaticFile, status = 200) {
  // login codes and reset tokens travel in the app's URLs: never in a Referer (issue 39)
  reply
    .code(status)
    .header('content-type', file.type)
    .header('cache-control', file.cache)
    .header('referrer-policy', 'no-referrer')
  if (file.type.startsWith('text/html')) reply.header('content-security-policy', CSP)
  if (file.gzip) {
    reply.header('vary', 'accept-encoding')
    if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? '')))
      return reply.header('content-encoding', 'gzip').send(file.gzip)
  }
  return reply.send(file.body)
}

export function registerWebApp(app: FastifyInstance, root = WEB_APP_DIR): void {
  const files = fs.existsSync(path.join(root, 'index.html')) ? readFiles(root) : undefined
  const config = { public: true }
  const schema = { hide: true }
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!files) {
      return reply
        .code(404)
        .type('text/plain; charset=utf-8')
        .send('The web app is not built: run `npm run build:web` (npm install does it).\n')
    }
    let pathname: string
    try {
      pathname = decodeURIComponent(request.url.split('?')[0]).slice(WEB_APP_PREFIX.length) || '/'
    } catch {
      return reply.code(400).type('text/plain; charset=utf-8').send('Malformed path\n')
    }
    const file = files.get(pathname)
    if (file) return send(request, reply, file)
    // a file that does not exist is a 404; any other path is a page of the app
    if (/\.[a-z0-9]+$/i.test(pathname)) return reply.code(404).type('text/plain; charset=utf-8').send('Not found\n')
    return send(request, reply, files.get('/index.html')!)
  }
  app.get(WEB_APP_PREFIX, { config, schema }, handler)
  app.get(`${WEB_APP_PREFIX}/*`, { config, schema }, handler)
}
