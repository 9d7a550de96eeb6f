import { Type } from 'typebox'
import type { App } from '../../platform/app-module.js'
import { envelope, errorResponses } from '../../platform/http/schemas.js'
import { DATA_CLASSES, each, type DataClassKey, type RetentionService } from './retention.service.js'

const Days = Type.Integer({ minimum: 1, maximum: 36500 })
const described = (key: DataClassKey, suffix = '') => ({ description: `${DATA_CLASSES[key].description}${suffix}` })
const RetentionSchema = Type.Object(
  {
    status: Type.Literal('success'),
    data: Type.Object(
      {
        periods: Type.Object(
          each((k) => Type.Integer({ minimum: 1, maximum: 36500, ...described(k) })),
          { additionalProperties: false },
        ),
        defaults: Type.Object(
          each(() => Days),
          { additionalProperties: false },
        ),
        maximums: Type.Object(
          each(() => Type.Union([Days, Type.Null()])),
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)
const RetentionBodySchema = Type.Object(
  each((k) => Type.Optional(Type.Union([Days, Type.Null()], described(k, '; null = back to the default')))),
  { additionalProperties: false },
)
const SweepSchema = Type.Object(
  {
    status: Type.Literal('success'),
    data: Type.Object(
      {
        dry_run: Type.Boolean(),
        removed: Type.Object(
          each(() => Type.Integer({ minimum: 0 })),
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

/** Retention per tenant (tenant.administrate): periods per data class, and a sweep on demand or as a dry run. */
export async function retentionRoutes(app: App, { retention }: { retention: RetentionService }): Promise<void> {
  const tags = ['administration']
  app.get(
    '/api/administration/retention',
    {
      schema: {
        tags,
        summary: "The tenant's retention periods in days per data class, with defaults and the operator's maximums",
        response: { 200: RetentionSchema, ...errorResponses },
      },
    },
    async (request) => envelope(await retention.show(request.actor)),
  )
  app.put(
    '/api/administration/retention',
    {
      schema: {
        tags,
        summary: 'Set retention periods (days; null = back to the default); classes not sent keep theirs',
        body: RetentionBodySchema,
        response: { 200: RetentionSchema, ...errorResponses },
      },
    },
    async (request) => envelope(await retention.update(request.actor, request.body)),
  )
  app.post(
    '/api/administration/retention/sweep',
    {
      schema: {
        tags,
        summary:
          'Remove now what is older than the periods (the daily sweep, for this tenant); dry_run=true only counts',
        querystring: Type.Object(
          { dry_run: Type.Optional(Type.Boolean({ default: false })) },
          { additionalProperties: false },
        ),
        response: { 200: SweepSchema, ...errorResponses },
      },
    },
    async (request) => envelope(await retention.sweepNow(request.actor, request.query.dry_run ?? false)),
  )
}
