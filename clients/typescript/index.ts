/**
 * A typed client for workplace-api: `openapi-fetch` over the types `openapi-typescript` generated from
 * the server's OpenAPI document (schema.d.ts; regenerate with `npm run openapi:generate`).
 *
 *   const api = createWorkplaceClient({ baseUrl: 'http://127.0.0.1:3000' })
 *   const { data } = await api.POST('/api/auth/login', { body: { tenant: 'demo', username: 'anna', password } })
 *   api.useToken(data!.access_token)
 *   const { data: unread } = await api.GET('/api/notifications', { params: { query: { filter: { read_at: { null: true } } } } })
 */
import createClient, { type Client } from 'openapi-fetch'
import type { paths } from './schema.js'

export type { paths, operations } from './schema.js'

export interface WorkplaceClientOptions {
  baseUrl: string
  token?: string
  fetch?: (input: Request) => Promise<Response>
  /**
   * A `429 Too Many Requests` (a rate or concurrency limit, docs/limits.md) is retried after its
   * `Retry-After` (plus up to 20 % jitter) this many times (default 3; 0: never); a wait longer than
   * `maxRetryWaitSeconds` (default 60) is not waited for: the 429 is returned.
   */
  retries?: number
  maxRetryWaitSeconds?: number
  /** Called before each wait for a retry (e.g. to tell the user "busy, retrying in N s"). */
  onRetry?: (info: { attempt: number; waitSeconds: number; url: string }) => void
}

/** Seconds to wait after a 429: its `Retry-After` (seconds or an HTTP date), else 1, 2, 4 … by attempt. */
export function retryAfterSeconds(header: string | null, attempt: number, now = Date.now()): number {
  if (header !== null && /^\d+$/.test(header.trim())) return Number(header.trim())
  const date = header === null ? Number.NaN : Date.parse(header)
  if (!Number.isNaN(date)) return Math.max(0, Math.ceil((date - now) / 1000))
  return 2 ** attempt
}

/** `fetch` that retries a 429 after the server's `Retry-After` (the request is cloned, so a body is sent again). */
export function retryingFetch(
  fetcher: (input: Request) => Promise<Response>,
  options: Pick<WorkplaceClientOptions, 'retries' | 'maxRetryWaitSeconds' | 'onRetry'> = {},
): (input: Request) => Promise<Response> {
  const retries = options.retries ?? 3
  const maxWait = options.maxRetryWaitSeconds ?? 60
  return async (input) => {
    for (let attempt = 0; ; attempt++) {
      const response = await fetcher(attempt < retries ? input.clone() : input)
      if (response.status !== 429 || attempt >= retries) return response
      const waitSeconds = retryAfterSeconds(response.headers.get('retry-after'), attempt)
      if (waitSeconds > maxWait) return response
      await response.body?.cancel()
      options.onRetry?.({ attempt: attempt + 1, waitSeconds, url: input.url })
      await new Promise((resolve) => setTimeout(resolve, waitSeconds * 1000 * (1 + Math.random() * 0.2)))
    }
  }
}

export type WorkplaceClient = Client<paths> & {
  /** Sends `authorization: Bearer <token>` from now on (undefined: no header). */
  useToken(token: string | undefined): void
}

/**
 * The server's query conventions nest brackets (`filter[read_at][null]=true`, `filter[id][in]=1,2`):
 * objects are serialised to any depth, arrays as comma lists.
 */
export function serializeQuery(query: Record<string, unknown>): string {
  const parts: string[] = []
  const add = (key: string, value: unknown) => {
    if (value === undefined) return
    if (Array.isArray(value)) parts.push(`${key}=${value.map((v) => encodeURIComponent(String(v))).join(',')}`)
    else if (value !== null && typeof value === 'object')
      for (const [k, v] of Object.entries(value)) add(`${key}[${encodeURIComponent(k)}]`, v)
    else parts.push(`${key}=${encodeURIComponent(String(value))}`)
  }
  for (const [key, value] of Object.entries(query)) add(encodeURIComponent(key), value)
  return parts.join('&')
}

export function createWorkplaceClient(options: WorkplaceClientOptions): WorkplaceClient {
  let token = options.token
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: retryingFetch((request) => (options.fetch ?? globalThis.fetch)(request), options),
    querySerializer: serializeQuery,
  })
  client.use({
    onRequest({ request }) {
      if (token) request.headers.set('authorization', `Bearer ${token}`)
      return request
    },
  })
  return Object.assign(client, { useToken: (next: string | undefined) => void (token = next) })
}
