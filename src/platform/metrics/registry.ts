import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type pg from 'pg'

/**
 * The process's Prometheus metrics (prom-client). One registry per process: the collectors are
 * module singletons, so the code that observes something records it wherever it runs (HTTP, worker).
 */
export const registry = new Registry()
// process metrics, including event-loop lag (nodejs_eventloop_lag_seconds and its percentiles)
collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 })

export const httpRequests = new Counter({
  name: 'workplace_http_requests_total',
  help: 'HTTP requests answered, by route pattern, method and status',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [registry],
})

export const httpDuration = new Histogram({
  name: 'workplace_http_request_duration_seconds',
  help: 'Time to answer an HTTP request, by route pattern, method and status',
  labelNames: ['route', 'method', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
})

export const rateLimitedRequests = new Counter({
  name: 'workplace_rate_limited_requests_total',
  help: 'Requests refused with 429 by the fair-use limits, by tenant id, bucket (read, write, expensive) and limit (token, tenant, concurrency)',
  labelNames: ['tenant', 'bucket', 'limit'] as const,
  registers: [registry],
})

export const yieldedAdmissions = new Counter({
  name: 'workplace_tenant_yielded_admissions_total',
  help: 'Admissions of a flooding tenant (requests waiting in line) held back on a node so that the requests of others go first, by tenant id',
  labelNames: ['tenant'] as const,
  registers: [registry],
})

const jobOutcomes = new Counter({
  name: 'workplace_job_runs_total',
  help: 'Job runs by task and outcome (success, failure)',
  labelNames: ['task', 'outcome'] as const,
  registers: [registry],
})

const jobDuration = new Histogram({
  name: 'workplace_job_duration_seconds',
  help: 'Job run time by task',
  labelNames: ['task'] as const,
  buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60],
  registers: [registry],
})

const deliveries = new Counter({
  name: 'workplace_deliveries_total',
  help: 'Outbound delivery attempts by channel (webhook, push, email) and outcome',
  labelNames: ['channel', 'outcome'] as const,
  registers: [registry],
})

const openStreams = new Gauge({
  name: 'workplace_sse_streams_open',
  help: 'Server-sent event streams open in this process',
  registers: [registry],
})

const pools = new Map<pg.Pool, string>()
new Gauge({
  name: 'workplace_db_pool_connections',
  help: 'Database pool connections by pool and state (in_use, idle) and clients waiting for one (waiting)',
  labelNames: ['pool', 'state'] as const,
  registers: [registry],
  collect() {
    this.reset()
    for (const [pool, name] of pools) {
      if (pool.ended) {
        pools.delete(pool)
        continue
      }
      this.inc({ pool: name, state: 'in_use' }, pool.totalCount - pool.idleCount)
      this.inc({ pool: name, state: 'idle' }, pool.idleCount)
      this.inc({ pool: name, state: 'waiting' }, pool.waitingCount)
    }
  },
})

/** Reports a pool's connections in `workplace_db_pool_connections{pool=name}` until it ends. */
export function observePool(pool: pg.Pool, name: string): void {
  pools.set(pool, name)
}

/** Counts one delivery attempt; push and e-mail senders call it like the webhook deliverer does. */
export function recordDelivery(channel: 'webhook' | 'push' | 'email', outcome: string): void {
  deliveries.inc({ channel, outcome })
}

/** Counts an open SSE stream; call the returned function once when it closes. */
export function trackOpenStream(): () => void {
  openStreams.inc()
  let released = false
  return () => {
    if (!released) openStreams.dec()
    released = true
  }
}

/** Wraps job handlers so that every run counts its outcome and duration. */
export function instrumentJobs<A extends unknown[], R>(
  handlers: Record<string, (...args: A) => R>,
): Record<string, (...args: A) => Promise<Awaited<R>>> {
  return Object.fromEntries(
    Object.entries(handlers).map(([task, handler]) => [
      task,
      async (...args: A): Promise<Awaited<R>> => {
        const end = jobDuration.startTimer({ task })
        try {
          const result = await handler(...args)
          jobOutcomes.inc({ task, outcome: 'success' })
          return result
        } catch (error) {
          jobOutcomes.inc({ task, outcome: 'failure' })
          throw error
        } finally {
          end()
        }
      },
    ]),
  )
}
