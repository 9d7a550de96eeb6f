import type { FastifyInstance } from 'fastify'
import { levelEnabled } from '../logging.js'
import { problemCodeOf } from './error-handler.js'

/**
 * One line per request when it completes (Fastify's own two lines are off): method, route pattern,
 * status, duration, request id, tenant and user, and the problem `code` of an error answer. The URL
 * itself is not logged: its query string may carry a grant token. Health probes log at `debug` only.
 */
export function registerRequestLog(app: FastifyInstance): void {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? '(no route)'
    const status = reply.statusCode
    const level = route.startsWith('/health/') ? 'debug' : status >= 500 ? 'error' : 'info'
    if (!levelEnabled(request.log, level)) return done()
    const line = {
      method: request.method,
      route,
      status,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      tenantId: request.actor?.tenantId,
      userId: request.actor?.userId,
      code: problemCodeOf(reply),
    }
    request.log[level](line, `${request.method} ${route} ${status}`)
    done()
  })
}
