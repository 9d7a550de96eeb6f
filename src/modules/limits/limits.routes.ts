import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Config } from '../../config.js'
import type { Db } from '../../platform/db/schema.js'
import { AppError, notFound, unauthorized } from '../../platform/http/errors.js'
import { Envelope, envelope, errorResponses } from '../../platform/http/schemas.js'
import { forbidden } from '../../platform/http/errors.js'
import { QUOTA_NAMES, quotaUsage, tenantQuotas } from '../../platform/limits/quotas.js'
import type { LimitsHandle } from '../../platform/limits/index.js'
import { loadTenantLimits, writeTenantLimits } from '../../platform/limits/tenant-limits.js'
import { findTenantBySlug } from '../tenants/index.js'

const Count = Type.Integer({ minimum: 0, maximum: 1_000_000_000 })
/** Stored bytes (the file_bytes quota): past int4, up to what a JSON number holds exactly. */
const Bytes = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
const BucketsSchema = Type.Object(
  { read: Type.Optional(Count), write: Type.Optional(Count), expensive: Type.Optional(Count) },
  { additionalProperties: false },
)
const LimitsBodySchema = Type.Object(
  {
    token: Type.Optional(BucketsSchema),
    tenant: Type.Optional(BucketsSchema),
    max_in_flight: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    max_db_connections: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    quotas: Type.Optional(
      Type.Object(
        {
          users: Type.Optional(Count),
          automations: Type.Optional(Count),
          push_subscriptions: Type.Optional(Count),
          file_bytes: Type.Optional(Bytes),
        },
        { additionalProperties: false },
      ),
    ),
    exempt: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
const Buckets = Type.Object({ read: Count, write: Count, expensive: Count })
const EffectiveSchema = Type.Object({
  tenant_slug: Type.String(),
  token: Buckets,
  tenant: Buckets,
  max_in_flight: Type.Integer(),
  max_db_connections: Type.Integer(),
  exempt: Type.Boolean(),
  window_seconds: Type.Integer(),
  quotas: Type.Object({ users: Count, automations: Count, push_subscriptions: Count, file_bytes: Bytes }),
})

const QuotaSchema = Type.Object({ used: Type.Integer(), limit: Type.Integer() })
const UsageSchema = Type.Object(
  {
    quotas: Type.Object({
      users: QuotaSchema,
      automations: QuotaSchema,
      push_subscriptions: QuotaSchema,
      file_bytes: Type.Object(
        { used: Type.Integer(), limit: Type.Integer() },
        { description: "bytes of the file manager's files and their posters" },
      ),
    }),
    rate_limits: Type.Object({
      window_seconds: Type.Integer(),
      token: Buckets,
      tenant: Buckets,
      max_in_flight: Type.Integer({ description: 'requests of the organisation in flight at once, per node' }),
      max_db_connections: Type.Integer({
        description: "database connections the organisation's requests hold at once, per node",
      }),
      exempt: Type.Boolean(),
    }),
  },
  { $id: 'Usage' },
)

const digest = (value: string) => createHash('sha256').update(value).digest()
const BEARER = /^Bearer\s+(\S+)\s*$/i

/**
 * The operator's routes (OPERATOR_TOKEN; absent: 404): read and raise a tenant's limits. Not a tenant's
 * route: a tenant's own administrators cannot reach them with any token of theirs. Hidden from the
 * OpenAPI document (docs/limits.md describes them).
 */
export async function limitsRoutes(
  root: FastifyInstance,
  { db, config, limits }: { db: Db; config: Config; limits: LimitsHandle },
): Promise<void> {
  const operatorToken = config.operatorToken
  const app = root.withTypeProvider<TypeBoxTypeProvider>()
  const expected = operatorToken ? digest(operatorToken) : undefined

  // checked before anything else of the request (its body is validated after)
  async function requireOperator(request: FastifyRequest): Promise<void> {
    if (!expected) throw notFound('Route')
    if (!timingSafeEqual(digest(BEARER.exec(request.headers.authorization ?? '')?.[1] ?? ''), expected))
      throw unauthorized()
  }

  async function tenantId(slug: string): Promise<number> {
    const tenant = await findTenantBySlug(db, slug)
    if (!tenant) throw new AppError(404, 'not_found', `No tenant "${slug}"`, { tenant: ['unknown tenant'] })
    return tenant.id
  }

  const effective = async (slug: string, id: number) => ({
    tenant_slug: slug,
    ...(await loadTenantLimits(db, id, config.limits)),
    window_seconds: config.limits.windowSeconds,
    quotas: await tenantQuotas(db, id, config.limits.quotas),
  })
  const params = Type.Object({ tenant: Type.String({ minLength: 1, maxLength: 100 }) })

  app.get(
    '/api/administration/usage',
    {
      schema: {
        tags: ['administration'],
        description:
          "The organisation's use of each quota against its limit, and its rate limits (docs/limits.md). Administrators only.",
        response: { 200: Envelope(UsageSchema), ...errorResponses },
      },
    },
    async (request) => {
      const actor = request.actor
      if (!actor.isAdmin) throw forbidden('Only administrators see the usage of their organisation')
      const [quotas, used, rates] = await Promise.all([
        tenantQuotas(db, actor.tenantId, config.limits.quotas),
        quotaUsage(db, actor.tenantId),
        loadTenantLimits(db, actor.tenantId, config.limits),
      ])
      const quota = (name: (typeof QUOTA_NAMES)[number]) => ({ used: used[name], limit: quotas[name] })
      return envelope({
        quotas: {
          users: quota('users'),
          automations: quota('automations'),
          push_subscriptions: quota('push_subscriptions'),
          file_bytes: quota('file_bytes'),
        },
        rate_limits: { window_seconds: config.limits.windowSeconds, ...rates },
      })
    },
  )
  app.get(
    '/api/operator/tenants/:tenant/limits',
    {
      config: { public: true },
      onRequest: requireOperator,
      schema: { hide: true, params, response: { 200: EffectiveSchema, ...errorResponses } },
    },
    async (request) => {
      return effective(request.params.tenant, await tenantId(request.params.tenant))
    },
  )
  app.put(
    '/api/operator/tenants/:tenant/limits',
    {
      config: { public: true },
      onRequest: requireOperator,
      schema: { hide: true, params, body: LimitsBodySchema, response: { 200: EffectiveSchema, ...errorResponses } },
    },
    async (request) => {
      const id = await tenantId(request.params.tenant)
      const { exempt, ...overrides } = request.body
      await writeTenantLimits(db, id, overrides, exempt)
      limits.forget(id)
      return effective(request.params.tenant, id)
    },
  )
}
