import { Type, type Static } from 'typebox'
import { IdSchema, Nullable, TimestampSchema } from '../../platform/http/schemas.js'

const Opt = Type.Optional

export const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User'
export const ENTERPRISE_USER = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'
export const CORE_GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group'
export const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse'
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'

// --- /api/administration/scim-tokens

export const CreateScimTokenBodySchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'what the token is for, e.g. "Entra ID"' }),
    default_role_id: Opt(
      Type.Integer({
        minimum: 1,
        description: 'role of the users the SCIM client creates; default: the tenant role named "Employee"',
      }),
    ),
  },
  { additionalProperties: false },
)
export type CreateScimTokenBody = Static<typeof CreateScimTokenBodySchema>

export const ScimTokenSchema = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    default_role_id: Type.Integer(),
    created_by: Nullable(Type.Integer()),
    created_at: TimestampSchema,
    revoked_at: Nullable(TimestampSchema),
  },
  { $id: 'ScimToken' },
)
export const CreatedScimTokenSchema = Type.Object({
  ...ScimTokenSchema.properties,
  token: Type.String({ description: 'the bearer token of the SCIM client: shown in this answer only' }),
})
export const ScimTokenParamsSchema = Type.Object({ id: IdSchema })

// --- /scim/v2

/** RFC 7644 §3.12: every error under /scim/v2 (the status as a string). */
export const ScimErrorSchema = Type.Object(
  {
    schemas: Type.Array(Type.String()),
    status: Type.String({ description: 'the HTTP status, as a string' }),
    scimType: Opt(Type.String({ description: 'invalidFilter, uniqueness, invalidPath, invalidValue, …' })),
    detail: Opt(Type.String()),
  },
  { $id: 'ScimError' },
)
export const scimErrorResponses = { '4xx': ScimErrorSchema, '5xx': ScimErrorSchema } as const

const Meta = Type.Object({
  resourceType: Type.String(),
  created: Type.String({ format: 'date-time' }),
  lastModified: Type.String({ format: 'date-time' }),
  location: Type.String(),
  version: Type.String({ description: 'weak ETag of the resource' }),
})

const MultiValue = Type.Object(
  {
    value: Opt(Type.String()),
    type: Opt(Type.String()),
    primary: Opt(Type.Union([Type.Boolean(), Type.String()])),
    display: Opt(Type.String()),
  },
  { additionalProperties: true },
)

const BooleanLike = Type.Union([Type.Boolean(), Type.String({ description: '"True"/"False" as Entra ID sends them' })])

/** A SCIM User as sent: known attributes are typed; others of the RFC schemas are accepted and ignored. */
export const ScimUserInputSchema = Type.Object(
  {
    schemas: Opt(Type.Array(Type.String())),
    id: Opt(Type.String()),
    externalId: Opt(Nullable(Type.String({ maxLength: 255 }))),
    userName: Type.String({ minLength: 1, maxLength: 255 }),
    name: Opt(
      Type.Object(
        {
          givenName: Opt(Nullable(Type.String({ maxLength: 255 }))),
          familyName: Opt(Nullable(Type.String({ maxLength: 255 }))),
          formatted: Opt(Nullable(Type.String())),
        },
        { additionalProperties: true },
      ),
    ),
    displayName: Opt(Nullable(Type.String({ maxLength: 511 }))),
    emails: Opt(Type.Array(MultiValue)),
    phoneNumbers: Opt(Type.Array(MultiValue)),
    active: Opt(BooleanLike),
    preferredLanguage: Opt(Nullable(Type.String({ maxLength: 35 }))),
    password: Opt(Type.String({ maxLength: 256, description: 'write-only' })),
    [ENTERPRISE_USER]: Opt(
      Type.Object({ employeeNumber: Opt(Nullable(Type.String({ maxLength: 64 }))) }, { additionalProperties: true }),
    ),
  },
  { additionalProperties: true, $id: 'ScimUserInput' },
)
export type ScimUserInput = Static<typeof ScimUserInputSchema>

export const ScimUserSchema = Type.Object(
  {
    schemas: Type.Array(Type.String()),
    id: Type.String(),
    externalId: Opt(Type.String()),
    userName: Opt(Type.String()),
    name: Opt(
      Type.Object({ givenName: Opt(Type.String()), familyName: Opt(Type.String()), formatted: Opt(Type.String()) }),
    ),
    displayName: Opt(Type.String()),
    emails: Opt(Type.Array(MultiValue)),
    phoneNumbers: Opt(Type.Array(MultiValue)),
    active: Opt(Type.Boolean()),
    preferredLanguage: Opt(Type.String()),
    groups: Opt(Type.Array(MultiValue)),
    [ENTERPRISE_USER]: Opt(Type.Object({ employeeNumber: Opt(Type.String()) })),
    meta: Opt(Meta),
  },
  { $id: 'ScimUser' },
)

export const ScimGroupInputSchema = Type.Object(
  {
    schemas: Opt(Type.Array(Type.String())),
    id: Opt(Type.String()),
    externalId: Opt(Nullable(Type.String({ maxLength: 255 }))),
    displayName: Type.String({ minLength: 1, maxLength: 255 }),
    members: Opt(Type.Array(MultiValue)),
  },
  { additionalProperties: true, $id: 'ScimGroupInput' },
)
export type ScimGroupInput = Static<typeof ScimGroupInputSchema>

export const ScimGroupSchema = Type.Object(
  {
    schemas: Type.Array(Type.String()),
    id: Type.String(),
    externalId: Opt(Type.String()),
    displayName: Opt(Type.String()),
    members: Opt(Type.Array(MultiValue)),
    meta: Opt(Meta),
  },
  { $id: 'ScimGroup' },
)

export const PatchOpSchema = Type.Object(
  {
    schemas: Type.Array(Type.String()),
    Operations: Type.Array(
      Type.Object(
        {
          op: Type.String({ description: 'add, replace or remove (any case: Entra ID sends "Replace")' }),
          path: Opt(Type.String({ maxLength: 1000 })),
          value: Opt(Type.Unknown()),
        },
        { additionalProperties: true },
      ),
      { maxItems: 1000 },
    ),
  },
  { additionalProperties: true, $id: 'ScimPatchOp' },
)
export type PatchOpBody = Static<typeof PatchOpSchema>

export const listResponseOf = <T extends ReturnType<typeof Type.Object>>(resource: T) =>
  Type.Object({
    schemas: Type.Array(Type.String()),
    totalResults: Type.Integer(),
    startIndex: Type.Integer(),
    itemsPerPage: Type.Integer(),
    Resources: Type.Array(resource),
  })

const Projection = {
  attributes: Opt(Type.String({ maxLength: 2000, description: 'comma-separated attribute paths to return' })),
  excludedAttributes: Opt(
    Type.String({ maxLength: 2000, description: 'comma-separated attribute paths to leave out' }),
  ),
}
export const ScimShowQuerySchema = Type.Object(Projection)
export const ScimListQuerySchema = Type.Object({
  filter: Opt(Type.String({ maxLength: 4000, description: 'RFC 7644 §3.4.2.2 filter, e.g. userName eq "anna"' })),
  startIndex: Opt(Type.Integer({ description: '1-based index of the first result (default 1)' })),
  count: Opt(Type.Integer({ description: 'results per page (default 100, at most 1000)' })),
  sortBy: Opt(Type.String({ maxLength: 200 })),
  sortOrder: Opt(Type.Union([Type.Literal('ascending'), Type.Literal('descending')])),
  ...Projection,
})
export type ScimListQuery = Static<typeof ScimListQuerySchema>
export type ScimShowQuery = Static<typeof ScimShowQuerySchema>

export const ScimIdParamsSchema = Type.Object({ id: Type.String({ maxLength: 100 }) })

/** Discovery documents (RFC 7643 §5–7), described loosely: their content is fixed by the RFC. */
export const ScimDocumentSchema = Type.Object({ schemas: Type.Array(Type.String()) }, { additionalProperties: true })
export const ScimDocumentListSchema = listResponseOf(ScimDocumentSchema)
