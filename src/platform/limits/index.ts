import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { LimitsConfig } from '../../config.js'
import type { Db } from '../db/schema.js'
import { AppError } from '../http/errors.js'
import { rateLimitedRequests } from '../metrics/registry.js'
import { type Budget, type BudgetState, type Bucket, type Decision, createRateLimiter } from './rate-limiter.js'
import { type EffectiveLimits, createTenantLimitsCache } from './tenant-limits.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The rate-limit bucket of the route (docs/limits.md); absent: `read` for GET/HEAD, `write` otherwise.
     * `expensive`: fan-out, imports, exports, tests and redeliveries of webhooks, full syncs.
     */
    rateLimit?: Bucket
    /** `false`: the route's requests are not counted among a tenant's requests in flight (a long-lived stream). */
    inFlightLimit?: false
  }
}

export type LimitsHandle = ReturnType<typeof createLimits>

/** How long a node trusts its copy of a tenant's limits (an operator's change reaches every node within it). */
export const TENANT_LIMITS_TTL_MS = 10_000

/** The bucket a request draws on: the route's own, an export (`Accept: text/csv`), or read/write by method. */
export function bucketOf(request: FastifyRequest): Bucket {
  const configured = request.routeOptions.config.rateLimit
  if (configured) return configured
  if (request.method === 'GET' || request.method === 'HEAD') {
    return request.headers.accept?.includes('text/csv') ? 'expensive' : 'read'
  }
  return 'write'
}

/** `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers: structured field lists). */
export function limitHeaders(states: BudgetState[], windowSeconds: number): Record<string, string> {
  return {
    'RateLimit-Policy': states.map((s) => `"${s.name}";q=${s.limit};w=${windowSeconds}`).join(', '),
    RateLimit: states.map((s) => `"${s.name}";r=${s.remaining};t=${s.reset}`).join(', '),
  }
}

interface TenantSlots {
  active: number
  queue: Array<{ admit: () => void; cancelled: boolean }>
}

/**
 * The fair-use limits of one node (docs/limits.md, decision 0023): rate limits per token and per tenant
 * (fleet-wide, rate-limiter.ts) and at most `max_in_flight` requests of one tenant at once on this node,
 * further ones waiting in line behind their own tenant's (at most `maxQueued`, then 429).
 */
export function createLimits(db: Db, config: LimitsConfig, log: (error: unknown) => void) {
  const limiter = createRateLimiter(db, { windowSeconds: config.windowSeconds, onError: log })
  const tenantLimits = createTenantLimitsCache(db, config, TENANT_LIMITS_TTL_MS)
  const slots = new Map<number, TenantSlots>()

  function budgets(request: FastifyRequest, limits: EffectiveLimits, bucket: Bucket): Budget[] {
    const actor = request.actor
    const holder = actor.scimTokenId === undefined ? `token:${actor.tokenId}` : `scim:${actor.scimTokenId}`
    return [
      { name: `token-${bucket}`, key: `${holder}:${bucket}`, limit: limits.token[bucket] },
      { name: `tenant-${bucket}`, key: `tenant:${bucket}`, limit: limits.tenant[bucket] },
    ]
  }

  function refuse(tenantId: number, bucket: Bucket, decision: Decision): AppError {
    const scope = decision.refusedBy?.startsWith('tenant') ? 'tenant' : 'token'
    rateLimitedRequests.inc({ tenant: String(tenantId), bucket, limit: scope })
    return new AppError(
      429,
      'rate_limited',
      scope === 'tenant'
        ? `Your organisation has used its ${bucket} requests for this window; retry in ${decision.retryAfter} s`
        : `Too many ${bucket} requests with this token; retry in ${decision.retryAfter} s`,
      undefined,
      { 'Retry-After': String(decision.retryAfter), ...limitHeaders(decision.states, config.windowSeconds) },
      { limit: decision.refusedBy ?? `${scope}-${bucket}`, retry_after: decision.retryAfter },
    )
  }

  /** Takes a place among the tenant's requests in flight on this node (or waits for one, behind its own tenant). */
  function enter(tenantId: number, max: number, bucket: Bucket, reply: FastifyReply): void | Promise<void> {
    let tenant = slots.get(tenantId)
    if (!tenant) slots.set(tenantId, (tenant = { active: 0, queue: [] }))
    const state = tenant
    let admitted = false
    let waiter: TenantSlots['queue'][number] | undefined
    reply.raw.once('close', () => {
      if (!admitted) {
        if (waiter) waiter.cancelled = true
        return
      }
      for (let next = state.queue.shift(); next; next = state.queue.shift()) {
        if (next.cancelled) continue
        return next.admit()
      }
      if (--state.active === 0 && state.queue.length === 0) slots.delete(tenantId)
    })
    if (state.active < max) {
      state.active++
      admitted = true
      return
    }
    if (state.queue.length >= config.maxQueued) {
      rateLimitedRequests.inc({ tenant: String(tenantId), bucket, limit: 'concurrency' })
      throw new AppError(
        429,
        'too_many_concurrent_requests',
        'Too many requests of your organisation are in progress; retry in 1 s',
        undefined,
        { 'Retry-After': '1' },
        { limit: 'tenant-concurrency', retry_after: 1 },
      )
    }
    return new Promise<void>((resolve) => {
      waiter = {
        cancelled: false,
        admit: () => {
          admitted = true
          resolve()
        },
      }
      state.queue.push(waiter)
    })
  }

  /**
   * The hook body: on requests with an actor (a bearer or SCIM token), takes a request from the token's and
   * the tenant's budget of its bucket, sets the headers, then a place among the tenant's requests in flight.
   * Synchronous while this node holds leased requests and knows the tenant's limits (the hot path).
   */
  function admit(request: FastifyRequest, reply: FastifyReply): void | Promise<void> {
    const tenantId = request.actor.tenantId
    const limits = tenantLimits.get(tenantId)
    if (limits instanceof Promise) return limits.then((l) => withLimits(request, reply, tenantId, l))
    return withLimits(request, reply, tenantId, limits)
  }

  function withLimits(
    request: FastifyRequest,
    reply: FastifyReply,
    tenantId: number,
    limits: EffectiveLimits,
  ): void | Promise<void> {
    if (limits.exempt) return
    const bucket = bucketOf(request)
    const decision = limiter.take(tenantId, budgets(request, limits, bucket))
    if (decision instanceof Promise) return decision.then((d) => afterDecision(reply, tenantId, limits, bucket, d))
    return afterDecision(reply, tenantId, limits, bucket, decision)
  }

  function afterDecision(
    reply: FastifyReply,
    tenantId: number,
    limits: EffectiveLimits,
    bucket: Bucket,
    decision: Decision,
  ): void | Promise<void> {
    if (!decision.allowed) throw refuse(tenantId, bucket, decision)
    reply.headers(limitHeaders(decision.states, config.windowSeconds))
    if (reply.request.routeOptions.config.inFlightLimit === false) return
    return enter(tenantId, limits.max_in_flight, bucket, reply)
  }

  return { admit, forget: (tenantId: number) => tenantLimits.forget(tenantId), sweep: limiter.sweep }
}

/**
 * Registers the limits on every route: a `preParsing` hook (after every authentication, the SCIM
 * scope's included; before a body is read), and the node's forgetting of ended windows. Their rows in
 * `rate_limit_counters` are deleted by the hourly job `limits:sweep_counters` (modules/limits), tenant
 * by tenant, on the job worker.
 */
export function registerLimits(app: FastifyInstance, db: Db, config: LimitsConfig): LimitsHandle {
  const limits = createLimits(db, config, (error) => app.log.warn({ err: error }, 'rate-limit lease failed'))
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (!request.actor) return done(null, payload)
    let pending: void | Promise<void>
    try {
      pending = limits.admit(request, reply)
    } catch (error) {
      return done(error instanceof Error ? error : new Error(String(error)))
    }
    if (!pending) return done(null, payload)
    pending.then(
      () => done(null, payload),
      (error: Error) => done(error),
    )
  })
  // ended windows are forgotten in memory every minute (their rows: sweepRateLimitCounters, a job)
  const sweep = setInterval(() => limits.sweep(), 60_000)
  sweep.unref()
  app.addHook('onClose', async () => clearInterval(sweep))
  return limits
}
