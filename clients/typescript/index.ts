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
  fetch?: typeof globalThis.fetch
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
    fetch: options.fetch,
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
