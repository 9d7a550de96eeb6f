import { Type, type Static } from 'typebox'
import { IdSchema, TimestampSchema } from '../../platform/http/schemas.js'

const Opt = Type.Optional

export const PERMISSION_ENTITIES = ['user', 'role', 'department'] as const
export type PermissionEntity = (typeof PERMISSION_ENTITIES)[number]

/** Every key a grant may carry somewhere; which ones a target accepts is the target's business. */
export const GRANT_KEYS = [
  'administrate',
  'administrationRights',
  'comment',
  'view',
  'viewFormMessages',
  'write',
] as const

const KeySchema = Type.String({ minLength: 1, maxLength: 64, default: 'view' })
const TargetIdSchema = Type.Union([IdSchema, Type.String({ minLength: 1, maxLength: 64 })])

/** One element of an `entity_permissions` array on folders and shared items (the target is implied). */
export const EntityPermissionElementSchema = Type.Object(
  {
    key: Opt(KeySchema),
    permission_entity: Type.Enum([...PERMISSION_ENTITIES]),
    permission_entity_id: IdSchema,
  },
  { additionalProperties: false },
)
export type EntityPermissionElement = Static<typeof EntityPermissionElementSchema>

/** The array form used in create/update bodies. */
export const EntityPermissionElementsSchema = Type.Array(EntityPermissionElementSchema, { maxItems: 1000 })

const BasicObject = Type.Object({}, { additionalProperties: true })

export const EntityPermissionSchema = Type.Object(
  {
    id: Opt(Type.Integer()),
    key: Opt(Type.String()),
    permission_entity: Opt(Type.String()),
    permission_entity_id: Opt(Type.Integer()),
    target_entity: Opt(Type.String()),
    target_entity_id: Opt(Type.Union([Type.Integer(), Type.String()])),
    created_at: Opt(TimestampSchema),
    updated_at: Opt(TimestampSchema),
    permissionEntity: Opt(Type.Union([BasicObject, Type.Null()])),
    targetEntity: Opt(Type.Union([BasicObject, Type.Null()])),
  },
  { $id: 'EntityPermission' },
)
export type EntityPermission = Static<typeof EntityPermissionSchema>

export const CreateEntityPermissionBodySchema = Type.Object(
  {
    key: Opt(KeySchema),
    permission_entity: Type.Enum([...PERMISSION_ENTITIES]),
    permission_entity_id: IdSchema,
    target_entity: Type.String({ minLength: 1, maxLength: 64 }),
    target_entity_id: TargetIdSchema,
  },
  { additionalProperties: false },
)
export type CreateEntityPermissionBody = Static<typeof CreateEntityPermissionBodySchema>

export const TargetParamsSchema = Type.Object({
  targetEntity: Type.String({ minLength: 1, maxLength: 64 }),
  targetEntityId: Type.String({ minLength: 1, maxLength: 64 }),
})
export type TargetParams = Static<typeof TargetParamsSchema>
