import { Agent, request } from 'undici'

export interface Outcome {
  op: string
  /** HTTP status; 0 when the connection failed (no answer at all). */
  status: number
  /** performance.now() when the request started and ended. */
  start: number
  end: number
  contentType?: string
  body?: any
}

export interface Operation {
  name: string
  method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  path: string
  token: string
  body?: unknown
  /** Called with the parsed body of a 2xx answer (e.g. to remember an acknowledged write). */
  acknowledged?: (body: any) => void
}

export interface LoadOptions {
  baseUrl: string
  connections: number
  durationMs: number
  /** The next operation of virtual user `user` (called once per request). */
  next: (user: number, iteration: number) => Operation
  /** Keep the bodies of non-2xx answers (for the failure reports). */
  keepErrorBodies?: boolean
}

export interface LoadReport {
  outcomes: Outcome[]
  byStatus: Record<string, number>
  failures: Outcome[]
}

/** One HTTP call through the load balancer; never throws (a failed connection is status 0). */
export async function send(agent: Agent, baseUrl: string, op: Operation): Promise<Outcome> {
  const start = performance.now()
  try {
    const response = await request(baseUrl + op.path, {
      dispatcher: agent,
      method: op.method,
      headers: {
        authorization: `Bearer ${op.token}`,
        ...(op.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: op.body !== undefined ? JSON.stringify(op.body) : undefined,
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    })
    const text = await response.body.text()
    const contentType = String(response.headers['content-type'] ?? '')
    let body: unknown = text
    if (contentType.includes('json')) {
      try {
        body = JSON.parse(text)
      } catch {
        /* keep the text */
      }
    }
    if (response.statusCode >= 200 && response.statusCode < 300) op.acknowledged?.(body)
    return { op: op.name, status: response.statusCode, start, end: performance.now(), contentType, body }
  } catch (error) {
    return { op: op.name, status: 0, start, end: performance.now(), body: (error as Error).message }
  }
}

/** `connections` virtual users, each sending its next request as soon as the last one answered. */
export async function runLoad(options: LoadOptions): Promise<LoadReport> {
  const agent = new Agent({ connections: options.connections, keepAliveTimeout: 5_000 })
  const outcomes: Outcome[] = []
  const deadline = performance.now() + options.durationMs
  await Promise.all(
    Array.from({ length: options.connections }, async (_, user) => {
      for (let iteration = 0; performance.now() < deadline; iteration++) {
        const outcome = await send(agent, options.baseUrl, options.next(user, iteration))
        if (!options.keepErrorBodies && outcome.status >= 200 && outcome.status < 400) outcome.body = undefined
        outcomes.push(outcome)
      }
    }),
  )
  await agent.close()
  const byStatus: Record<string, number> = {}
  for (const o of outcomes) byStatus[o.status] = (byStatus[o.status] ?? 0) + 1
  return { outcomes, byStatus, failures: outcomes.filter((o) => o.status === 0 || o.status >= 500) }
}
