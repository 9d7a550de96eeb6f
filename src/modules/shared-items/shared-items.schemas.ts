import { Type, type Static } from 'typebox'
import {
  IdSchema,
  Nullable,
  NullableTimestampSchema,
  TimestampSchema,
  UuidSchema,
} from '../../platform/http/schemas.js'
import { EntityPermissionElementsSchema, EntityPermissionSchema } from '../entity-permissions/index.js'
import { REDIRECT_TYPES } from './shared-item-types.js'

const Opt = Type.Optional
const AnyObject = Type.Object({}, { additionalProperties: true })
const TargetIdSchema = Type.Union([IdSchema, Type.String({ minLength: 1, maxLength: 64 })])

/** A shared item as returned by the API; every field is optional because `selects` may drop it. */
export const SharedItemSchema = Type.Object(
  {
    id: Opt(Type.String()),
    user_id: Opt(Nullable(Type.Integer())),
    type: Opt(Type.String()),
    redirect_type: Opt(Type.String()),
    targetable_type: Opt(Type.String()),
    targetable_id: Opt(Type.Union([Type.Integer(), Type.String()])),
    config: Opt(AnyObject),
    url: Opt(Type.String()),
    created_at: Opt(TimestampSchema),
    updated_at: Opt(TimestampSchema),
    deleted_at: Opt(NullableTimestampSchema),
    user: Opt(Nullable(AnyObject)),
    targetable: Opt(Nullable(AnyObject)),
    entityPermissions: Opt(Type.Array(EntityPermissionSchema)),
    access_count: Opt(Type.Integer({ description: 'administration only: resolutions of the stable URL' })),
    last_accessed_at: Opt(Nullable(TimestampSchema)),
  },
  { $id: 'SharedItem' },
)

/** One resolution of the stable URL (share access log). */
export const SharedItemAccessSchema = Type.Object({
  id: Opt(Type.Integer()),
  shared_item_id: Opt(Type.String()),
  user_id: Opt(Nullable(Type.Integer())),
  outcome: Opt(
    Type.Union(
      ['redirected', 'grant_token_issued', 'resolved_without_redirect', 'denied', 'not_found'].map((o) =>
        Type.Literal(o),
      ),
    ),
  ),
  url_type: Opt(Nullable(Type.String())),
  created_at: Opt(TimestampSchema),
})
export type SharedItem = Static<typeof SharedItemSchema>

export const CreateSharedItemBodySchema = Type.Object(
  {
    type: Type.String({ minLength: 1, maxLength: 64 }),
    redirect_type: Opt(Type.Enum([...REDIRECT_TYPES])),
    targetable_type: Type.String({ minLength: 1, maxLength: 64 }),
    targetable_id: TargetIdSchema,
    config: Opt(AnyObject),
    entity_permissions: Opt(EntityPermissionElementsSchema),
    /** Accepted and ignored: the creator is always the requester. */
    user_id: Opt(Nullable(Type.Integer())),
  },
  { additionalProperties: false },
)
export type CreateSharedItemBody = Static<typeof CreateSharedItemBodySchema>

export const UpdateSharedItemBodySchema = Type.Object(
  {
    type: Opt(Type.String({ minLength: 1, maxLength: 64 })),
    redirect_type: Opt(Type.Enum([...REDIRECT_TYPES])),
    targetable_type: Opt(Type.String({ minLength: 1, maxLength: 64 })),
    targetable_id: Opt(TargetIdSchema),
    config: Opt(AnyObject),
    entity_permissions: Opt(EntityPermissionElementsSchema),
    /** Accepted and ignored (contract 30): the creator never changes. */
    user_id: Opt(Nullable(Type.Integer())),
  },
  { additionalProperties: false },
)
export type UpdateSharedItemBody = Static<typeof UpdateSharedItemBodySchema>

export const SharedItemParamsSchema = Type.Object({ id: UuidSchema })
export type SharedItemParams = Static<typeof SharedItemParamsSchema>

const FlagSchema = Type.Union([Type.Boolean(), Type.String({ maxLength: 8 })])

/** The target URL types (spec): at most one may be true. */
export const URL_TYPE_FLAGS = ['showFileContent', 'downloadFileContent', 'filePoster'] as const
export type UrlTypeFlag = (typeof URL_TYPE_FLAGS)[number]

export const ResolveQuerySchema = Type.Object(
  { showFileContent: Opt(FlagSchema), downloadFileContent: Opt(FlagSchema), filePoster: Opt(FlagSchema) },
  { additionalProperties: true },
)
export type ResolveQuery = Static<typeof ResolveQuerySchema>

export const ResolveResultSchema = Type.Object({
  redirect: Type.Boolean(),
  url: Nullable(Type.String()),
  url_context: Nullable(
    Type.Object({
      type: Type.String(),
      id: Type.Union([Type.Integer(), Type.String()]),
      title: Nullable(Type.String()),
      url: Type.String(),
    }),
  ),
})
export type ResolveResult = Static<typeof ResolveResultSchema>
