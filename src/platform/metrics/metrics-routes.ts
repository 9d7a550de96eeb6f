import { createHash, timingSafeEqual } from 'node:crypto'
import http from 'node:http'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { Gauge } from 'prom-client'
import type { Db } from '../db/schema.js'
import { unauthorized } from '../http/errors.js'
import { httpDuration, httpRequests, registry } from './registry.js'

export interface MetricsConfig {
  /** GET /metrics on the API port, for `Authorization: Bearer <token>` only. */
  token?: string
  /** A separate listener on 127.0.0.1:<port> serving /metrics without a token. */
  port?: number
}

let queueDb: Db | undefined
new Gauge({
  name: 'workplace_job_queue_depth',
  help: 'Jobs waiting in the queue by task and state (ready: due now, scheduled: due later)',
  labelNames: ['task', 'state'] as const,
  registers: [registry],
  async collect() {
    this.reset()
    if (!queueDb) return
    // graphile-worker's public `jobs` view exists, but counting on its tables avoids the view's joins per row
    const { rows } = await sql<{ task: string; state: string; count: string }>`
      select t.identifier as task, case when j.run_at <= now() then 'ready' else 'scheduled' end as state, count(*) as count
      from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
      where j.locked_at is null group by 1, 2`.execute(queueDb)
    for (const row of rows) this.set({ task: row.task, state: row.state }, Number(row.count))
  },
})

const digest = (value: string) => createHash('sha256').update(value).digest()
const BEARER = /^Bearer\s+(\S+)\s*$/i

/**
 * Metrics are off unless METRICS_TOKEN or METRICS_PORT is set. Every answered request is counted by
 * its route pattern (never the raw URL: ids would explode the label set); unmatched URLs count as `unmatched`.
 */
export async function registerMetrics(app: FastifyInstance, db: Db, config: MetricsConfig): Promise<void> {
  if (!config.token && !config.port) return
  queueDb = db
  app.addHook('onResponse', async (request, reply) => {
    const labels = {
      route: request.routeOptions.url ?? 'unmatched',
      method: request.method,
      status: String(reply.statusCode),
    }
    httpRequests.inc(labels)
    httpDuration.observe(labels, reply.elapsedTime / 1000)
  })
  if (config.token) {
    const expected = digest(config.token)
    app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
      if (!timingSafeEqual(digest(BEARER.exec(request.headers.authorization ?? '')?.[1] ?? ''), expected))
        throw unauthorized()
      return reply.type(registry.contentType).send(await registry.metrics())
    })
  }
  if (config.port) {
    const server = http.createServer((request, response) => {
      if (request.method !== 'GET' || request.url !== '/metrics') return void response.writeHead(404).end()
      registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
        () => response.writeHead(500).end(),
      )
    })
    // only alongside the API listener (an app built for inject never opens it)
    app.addHook('onListen', async () => {
      await new Promise<void>((resolve, reject) =>
        server.once('error', reject).listen(config.port, '127.0.0.1', resolve),
      )
    })
    app.addHook('onClose', async () => {
      if (server.listening) await new Promise((resolve) => server.close(resolve))
    })
  }
}
