import { spawn } from 'node:child_process'
import path from 'node:path'

const root = path.resolve(import.meta.dirname, '..')

/** What one autocannon run measured. */
export interface LoadResult {
  rps: number
  /** Requests answered in the run (2xx or not). */
  total: number
  p50: number
  p99: number
  p99_9: number
  errors: number
  non2xx: number
}

export interface LoadOptions {
  method?: string
  body?: string
  headers?: Record<string, string>
  seconds: number
  /** `[<id>]` in the body becomes a new id on every request (SCIM creates need a new userName each). */
  idReplacement?: boolean
  /** Concurrent connections (default 50). */
  connections?: number
}

export type Load = (url: string, options: LoadOptions) => Promise<LoadResult>

/** Runs autocannon in its own process so that load generation does not share the server's event loop. */
export async function load(url: string, options: LoadOptions): Promise<LoadResult> {
  const args = [
    '-c',
    String(options.connections ?? 50),
    '-d',
    String(options.seconds),
    '-j',
    '-m',
    options.method ?? 'GET',
  ]
  if (options.idReplacement) args.push('-I')
  for (const [k, v] of Object.entries(options.headers ?? {})) args.push('-H', `${k}=${v}`)
  if (options.body) args.push('-b', options.body, '-H', 'content-type=application/json')
  args.push(url)
  const child = spawn(path.join(root, 'node_modules/.bin/autocannon'), args, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  await new Promise((r) => child.on('close', r))
  const json = JSON.parse(out)
  return {
    rps: json.requests.average,
    total: json.requests.total,
    p50: json.latency.p50,
    p99: json.latency.p99,
    p99_9: json.latency.p99_9,
    errors: json.errors + json.timeouts,
    non2xx: json.non2xx,
  }
}
