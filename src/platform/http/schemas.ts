import { Type, type Static, type TSchema } from 'typebox'
import { EXPECTED } from './validation-messages.js'

export { EXPECTED }

/** Shared schema atoms. Every route response map spreads `errorResponses`. */
export const IdSchema = Type.Integer({ minimum: 1, maximum: 9007199254740991 })
export const UuidSchema = Type.String({ format: 'uuid' })
export const TimestampSchema = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}$',
  [EXPECTED]: 'a timestamp YYYY-MM-DD HH:MM:SS',
  examples: ['2026-01-31 09:30:00'],
})
export const NullableTimestampSchema = Type.Union([TimestampSchema, Type.Null()])
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** Accepts `YYYY-MM-DD HH:MM:SS`, ISO 8601, or `YYYY-MM-DD` for date fields. */
export const TimestampInputSchema = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}([ T]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:?\\d{2})?)?$',
  maxLength: 40,
  [EXPECTED]: 'a date YYYY-MM-DD or an ISO 8601 timestamp',
})

export const IdParamsSchema = Type.Object({ id: IdSchema })
export const UuidParamsSchema = Type.Object({ id: UuidSchema })

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String(),
    errors: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details' },
)
export type Problem = Static<typeof ProblemSchema>

/** Spread into every route's `response` so OpenAPI documents the error shape. */
export const errorResponses = { '4xx': ProblemSchema, '5xx': ProblemSchema } as const

/** A 204: `{"type":"null"}` in the document, and no payload for `reply.send()`. */
export const NoContentSchema = Type.Unsafe<void>(Type.Null())

/** `{status: "success", data}` — the envelope of users and notifications create/update/action endpoints. */
export const Envelope = <T extends TSchema>(data: T) => Type.Object({ status: Type.Literal('success'), data })

export function envelope<T>(data: T): { status: 'success'; data: T } {
  return { status: 'success', data }
}
