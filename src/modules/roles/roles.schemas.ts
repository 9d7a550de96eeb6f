import { Type, type Static } from 'typebox'
import { IdSchema, Nullable, TimestampSchema } from '../../platform/http/schemas.js'

const Opt = Type.Optional

export const RoleSchema = Type.Object(
  {
    id: Opt(Type.Integer()),
    name: Opt(Type.String()),
    permissions: Opt(Type.Array(Type.String())),
    active: Opt(Type.Boolean()),
    requires_mfa: Opt(
      Type.Boolean({ description: 'its users must sign in with TOTP (without it: an enrollment-only token)' }),
    ),
    folder_id: Opt(Nullable(Type.Integer())),
    created_at: Opt(TimestampSchema),
    updated_at: Opt(TimestampSchema),
  },
  { $id: 'Role' },
)

const roleFields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  permissions: Type.Array(Type.String({ maxLength: 100 }), { maxItems: 200 }),
  active: Type.Boolean(),
  requires_mfa: Type.Boolean(),
  folder_id: Nullable(IdSchema),
}

export const CreateRoleBodySchema = Type.Object(
  {
    name: roleFields.name,
    permissions: roleFields.permissions,
    active: Opt(roleFields.active),
    requires_mfa: Opt(roleFields.requires_mfa),
    folder_id: Opt(roleFields.folder_id),
  },
  { additionalProperties: false },
)
export type CreateRoleBody = Static<typeof CreateRoleBodySchema>

/** The create body with every field optional. */
export const UpdateRoleBodySchema = Type.Partial(CreateRoleBodySchema, { additionalProperties: false })
export type UpdateRoleBody = Static<typeof UpdateRoleBodySchema>
