import { Type, type Static } from 'typebox'
import { IdSchema, Nullable, TimestampSchema } from '../../platform/http/schemas.js'

const Opt = Type.Optional

export const DepartmentSchema = Type.Object(
  {
    id: Opt(Type.Integer()),
    name: Opt(Type.String()),
    folder_id: Opt(Nullable(Type.Integer())),
    notification_setting_id: Opt(Nullable(Type.Integer())),
    user_ids: Opt(Type.Array(Type.Integer())),
    created_at: Opt(TimestampSchema),
    updated_at: Opt(TimestampSchema),
  },
  { $id: 'Department' },
)

const fields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  user_ids: Type.Array(IdSchema, { maxItems: 100_000, uniqueItems: true }),
  folder_id: Nullable(IdSchema),
  notification_setting_id: Nullable(IdSchema),
}

export const CreateDepartmentBodySchema = Type.Object(
  {
    name: fields.name,
    user_ids: Opt(fields.user_ids),
    folder_id: Opt(fields.folder_id),
    notification_setting_id: Opt(fields.notification_setting_id),
  },
  { additionalProperties: false },
)
export type CreateDepartmentBody = Static<typeof CreateDepartmentBodySchema>

/** The create body with every field optional. */
export const UpdateDepartmentBodySchema = Type.Partial(CreateDepartmentBodySchema, { additionalProperties: false })
export type UpdateDepartmentBody = Static<typeof UpdateDepartmentBodySchema>
