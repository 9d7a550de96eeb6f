import { AsyncLocalStorage } from 'node:async_hooks'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { actingUserId, actorLabel, type Actor } from '../auth/actor.js'

/**
 * Who asked, from where: set for each HTTP request that can change something, read by the audit log,
 * the actor cache and the change notices (absent for reads, the CLI and jobs).
 */
const requests = new AsyncLocalStorage<FastifyRequest>()

/** Methods whose requests may write (audit records, actor changes); reads never need the context. */
const WRITING_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
let writingRequests = 0

export interface RequestContext {
  actorId: number | null
  /** `scim:<token id>` when a SCIM client made the request (actorId is null then). */
  actor: string | null
  requestId: string | null
  ip: string | null
  userAgent: string | null
}

/**
 * Runs every request that can write inside its own context (registered once, before authentication).
 * On Node 20 an AsyncLocalStorage in use costs a hook on every promise of the whole process: measured
 * 35–65 % of the throughput of `GET /api/users/current`. So the storage is switched on only while a
 * writing request is in flight, and off again when the last one has finished (Node 24's
 * AsyncContextFrame makes this cheap either way).
 */
export function registerRequestContext(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    if (!WRITING_METHODS.has(request.method)) return done()
    writingRequests++
    reply.raw.once('close', () => {
      if (--writingRequests === 0) requests.disable()
    })
    requests.run(request, done)
  })
}

/** The current request's context; the actor is read late, after authentication set it. */
export function currentRequestContext(): RequestContext {
  const request = requests.getStore()
  if (!request) return { actorId: null, actor: null, requestId: null, ip: null, userAgent: null }
  const agent = request.headers['user-agent']
  // unset on a request that failed authentication (the declared type says otherwise)
  const actor: Actor | undefined = (request as { actor?: Actor }).actor
  return {
    actorId: actor ? actingUserId(actor) : null,
    actor: actor ? actorLabel(actor) : null,
    requestId: request.id,
    ip: request.ip ?? null,
    userAgent: typeof agent === 'string' ? agent.slice(0, 500) : null,
  }
}

/** The HTTP request the current code runs for, if any (e.g. to mark it from a commit hook). */
export function currentRequest(): FastifyRequest | undefined {
  return requests.getStore()
}
