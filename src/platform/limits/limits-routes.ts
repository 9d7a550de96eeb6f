import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Config } from '../../config.js'
import type { Db } from '../db/schema.js'
import { AppError, notFound, unauthorized } from '../http/errors.js'
import { errorResponses } from '../http/schemas.js'
import type { LimitsHandle } from './index.js'
import { loadTenantLimits, writeTenantLimits } from './tenant-limits.js'

const Count = Type.Integer({ minimum: 0, maximum: 1_000_000_000 })
const BucketsSchema = Type.Object(
  { read: Type.Optional(Count), write: Type.Optional(Count), expensive: Type.Optional(Count) },
  { additionalProperties: false },
)
const LimitsBodySchema = Type.Object(
  {
    token: Type.Optional(BucketsSchema),
    tenant: Type.Optional(BucketsSchema),
    max_in_flight: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
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
  exempt: Type.Boolean(),
  window_seconds: Type.Integer(),
})

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
    const tenant = await db.selectFrom('tenants').select('id').where('slug', '=', slug).executeTakeFirst()
    if (!tenant) throw new AppError(404, 'not_found', `No tenant "${slug}"`, { tenant: ['unknown tenant'] })
    return tenant.id
  }

  const effective = async (slug: string, id: number) => ({
    tenant_slug: slug,
    ...(await loadTenantLimits(db, id, config.limits)),
    window_seconds: config.limits.windowSeconds,
  })
  const params = Type.Object({ tenant: Type.String({ minLength: 1, maxLength: 100 }) })

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
