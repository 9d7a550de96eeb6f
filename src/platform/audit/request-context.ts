import { AsyncLocalStorage } from 'node:async_hooks'
import type { FastifyInstance, FastifyRequest } from 'fastify'

/** Who asked, from where: set once per HTTP request, read by the audit log (absent for CLI and jobs). */
const requests = new AsyncLocalStorage<FastifyRequest>()

export interface RequestContext {
  actorId: number | null
  requestId: string | null
  ip: string | null
  userAgent: string | null
}

/** Runs every request inside its own context (registered once, before authentication). */
export function registerRequestContext(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => requests.run(request, done))
}

/** The current request's context; the actor is read late, after authentication set it. */
export function currentRequestContext(): RequestContext {
  const request = requests.getStore()
  if (!request) return { actorId: null, requestId: null, ip: null, userAgent: null }
  const agent = request.headers['user-agent']
  return {
    actorId: (request as { actor?: { userId: number } }).actor?.userId ?? null,
    requestId: request.id,
    ip: request.ip ?? null,
    userAgent: typeof agent === 'string' ? agent.slice(0, 500) : null,
  }
}

/** The HTTP request the current code runs for, if any (e.g. to mark it from a commit hook). */
export function currentRequest(): FastifyRequest | undefined {
  return requests.getStore()
}
