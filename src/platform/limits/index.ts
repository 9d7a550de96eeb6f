import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { LimitsConfig } from '../../config.js'
import { ConnectionPermits, runWithConnectionPermits } from '../db/connection-gate.js'
import type { Db } from '../db/schema.js'
import { actorLabel } from '../auth/actor.js'
import { AppError } from '../http/errors.js'
import { rateLimitedRequests, yieldedAdmissions } from '../metrics/registry.js'
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

/** How recently another tenant's request must have arrived on a node for a flooding tenant to yield to it. */
export const OTHERS_ACTIVE_MS = 1_000
/** The longest a flooding tenant's next admission is held back (a slow request must not park its place for long). */
const MAX_YIELD_MS = 250
/**
 * How long a tenant's requests must have waited in line without a break for it to count as flooding a node:
 * a tenant whose few requests met in line for a moment (two of them on one node) is not flooding.
 */
export const FLOODING_AFTER_MS = 100

/**
 * The two tenants whose requests reached this node last, and when: whether a tenant other than a given one
 * was active lately, in constant time and memory whatever the number of tenants.
 */
function createRecentTenants() {
  let latest = { tenantId: 0, at: -Infinity }
  let previous = { tenantId: 0, at: -Infinity }
  return {
    seen(tenantId: number, at: number) {
      if (tenantId === latest.tenantId) latest.at = at
      else {
        previous = latest
        latest = { tenantId, at }
      }
    },
    /** The latest tenant other than this one whose request arrived since then, if any. */
    otherActiveSince(tenantId: number, since: number): number | undefined {
      const other = latest.tenantId === tenantId ? previous : latest
      return other.at >= since ? other.tenantId : undefined
    },
  }
}

interface TenantSlots {
  active: number
  queue: Array<{ admit: () => void; cancelled: boolean }>
  /** Since when requests of the tenant have waited in line on this node without a break. */
  waitingSince?: number
  /** The tenant's database connections on this node (when fewer than its requests in flight). */
  permits?: ConnectionPermits
}

/**
 * What an admitted request still needs: nothing, or its pool checkouts gated by its tenant's connection
 * permits (the hook runs the rest of the request in their scope).
 */
export type Admission = void | ConnectionPermits

/**
 * The fair-use limits of one node (docs/limits.md, decision 0023): rate limits per token and per tenant
 * (fleet-wide, rate-limiter.ts) and at most `max_in_flight` requests of one tenant at once on this node,
 * further ones waiting in line behind their own tenant's (at most `maxQueued`, then 429).
 */
export function createLimits(db: Db, config: LimitsConfig, log: (error: unknown) => void) {
  const limiter = createRateLimiter(db, { windowSeconds: config.windowSeconds, onError: log })
  const tenantLimits = createTenantLimitsCache(db, config, TENANT_LIMITS_TTL_MS)
  const slots = new Map<number, TenantSlots>()
  const recentTenants = createRecentTenants()
  const yieldFactor = 100 / config.floodSharePercent - 1

  const flooding = (state: TenantSlots, now: number) =>
    state.waitingSince !== undefined && now - state.waitingSince >= FLOODING_AFTER_MS

  /**
   * A tenant whose requests have waited in line on this node for a while is flooding it: while another
   * tenant, not flooding, was active here lately, a place the flooding tenant frees passes to its next
   * request only after a pause, so that it holds its places at most TENANT_FLOOD_SHARE_PERCENT of the time
   * and the other's requests find the node (and the machine) free. A per-node bound caps a tenant's
   * concurrency, not its share of the CPU (decision 0023). Two flooding tenants do not yield to each other.
   */
  function yieldPause(tenantId: number, state: TenantSlots, admittedAt: number, now: number): number {
    if (yieldFactor === 0 || !flooding(state, now)) return 0
    const other = recentTenants.otherActiveSince(tenantId, now - OTHERS_ACTIVE_MS)
    if (other === undefined) return 0
    const theirs = slots.get(other)
    if (theirs && flooding(theirs, now)) return 0
    yieldedAdmissions.inc({ tenant: String(tenantId) })
    return Math.min(MAX_YIELD_MS, (now - admittedAt) * yieldFactor)
  }

  function budgets(request: FastifyRequest, limits: EffectiveLimits, bucket: Bucket): Budget[] {
    const actor = request.actor
    // a user's token by its id; a client that is no user (a SCIM token) by its label, `scim:<token id>`
    const holder = actorLabel(actor) ?? `token:${actor.tokenId}`
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

  /**
   * Once a request has its place in flight: while its tenant has a connection permit free, the request
   * keeps one for its whole life (no per-checkout gating, no request context: the common case costs
   * nothing); otherwise its checkouts wait for a permit (connection-gate.ts).
   */
  function connectionPermit(state: TenantSlots, kept: () => void): Admission {
    const permits = state.permits
    if (!permits) return
    if (!permits.tryAcquire()) return permits
    kept()
  }

  /**
   * The tenant's connection permits on this node: none while it has no fewer connections than requests in
   * flight (the in-flight bound is the connection bound); permits once made follow the tenant's bound (an
   * operator's change applies to the requests in line at the tenant's next request).
   */
  function boundConnections(state: TenantSlots, limits: EffectiveLimits): void {
    const connections = limits.max_db_connections
    if (state.permits) {
      if (state.permits.max !== connections) state.permits.resize(connections)
    } else if (connections < limits.max_in_flight) state.permits = new ConnectionPermits(connections)
  }

  /** Takes a place among the tenant's requests in flight on this node (or waits for one, behind its own tenant). */
  function enter(
    tenantId: number,
    limits: EffectiveLimits,
    bucket: Bucket,
    reply: FastifyReply,
  ): Admission | Promise<Admission> {
    let tenant = slots.get(tenantId)
    if (!tenant) {
      tenant = { active: 0, queue: [] }
      slots.set(tenantId, tenant)
    }
    const state = tenant
    const max = limits.max_in_flight
    boundConnections(state, limits)
    let admitted = false
    let keepsPermit = false
    const kept = () => (keepsPermit = true)
    let waiter: TenantSlots['queue'][number] | undefined
    let admittedAt = 0
    const handOver = () => {
      for (let next = state.queue.shift(); next; next = state.queue.shift()) {
        if (state.queue.length === 0) state.waitingSince = undefined
        if (next.cancelled) continue
        return next.admit()
      }
      if (--state.active === 0 && state.queue.length === 0 && (state.permits?.idle ?? true)) slots.delete(tenantId)
    }
    reply.raw.once('close', () => {
      if (!admitted) {
        if (waiter) waiter.cancelled = true
        return
      }
      // the permit first: the next request in line may keep it
      if (keepsPermit) state.permits?.release()
      const pause = yieldPause(tenantId, state, admittedAt, performance.now())
      if (pause > 0) setTimeout(handOver, pause)
      else handOver()
    })
    if (state.active < max) {
      state.active++
      admitted = true
      admittedAt = performance.now()
      return connectionPermit(state, kept)
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
    return new Promise<Admission>((resolve) => {
      waiter = {
        cancelled: false,
        admit: () => {
          admitted = true
          admittedAt = performance.now()
          resolve(connectionPermit(state, kept))
        },
      }
      if (state.queue.length === 0) state.waitingSince = performance.now()
      state.queue.push(waiter)
    })
  }

  /**
   * The hook body: on requests with an actor (a bearer or SCIM token), takes a request from the token's and
   * the tenant's budget of its bucket, sets the headers, then a place among the tenant's requests in flight.
   * Synchronous while this node holds leased requests and knows the tenant's limits (the hot path).
   */
  function admit(request: FastifyRequest, reply: FastifyReply): Admission | Promise<Admission> {
    const tenantId = request.actor.tenantId
    recentTenants.seen(tenantId, performance.now())
    const limits = tenantLimits.get(tenantId)
    if (limits instanceof Promise) return limits.then((l) => withLimits(request, reply, tenantId, l))
    return withLimits(request, reply, tenantId, limits)
  }

  function withLimits(
    request: FastifyRequest,
    reply: FastifyReply,
    tenantId: number,
    limits: EffectiveLimits,
  ): Admission | Promise<Admission> {
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
  ): Admission | Promise<Admission> {
    if (!decision.allowed) throw refuse(tenantId, bucket, decision)
    reply.headers(limitHeaders(decision.states, config.windowSeconds))
    if (reply.request.routeOptions.config.inFlightLimit === false) return
    return enter(tenantId, limits, bucket, reply)
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
    let pending: Admission | Promise<Admission>
    try {
      pending = limits.admit(request, reply)
    } catch (error) {
      return done(error instanceof Error ? error : new Error(String(error)))
    }
    const proceed = (admission: Admission) => {
      if (!admission) return done(null, payload)
      // the rest of the request (parsing, handler) in the scope of its tenant's connection permits
      const scope = runWithConnectionPermits(admission, () => done(null, payload))
      reply.raw.once('close', scope.done)
    }
    if (!(pending instanceof Promise)) return proceed(pending)
    pending.then(proceed, (error: Error) => done(error))
  })
  // ended windows are forgotten in memory every minute (their rows: sweepRateLimitCounters, a job)
  const sweep = setInterval(() => limits.sweep(), 60_000)
  sweep.unref()
  app.addHook('onClose', async () => clearInterval(sweep))
  return limits
}
