import { Type, type Static } from 'typebox'
import { IdSchema, Nullable, TimestampSchema } from '../../platform/http/schemas.js'
import { EntityPermissionElementsSchema, EntityPermissionSchema } from '../entity-permissions/index.js'
import { FOLDER_TYPES } from './folder-types.js'

const Opt = Type.Optional

const FolderBasicSchema = Type.Object({
  id: Opt(Type.Integer()),
  type: Opt(Type.String()),
  parent_id: Opt(Nullable(Type.Integer())),
  lang_id: Opt(Type.String()),
  name: Opt(Nullable(Type.String())),
  icon_id: Opt(Nullable(Type.Integer())),
  show_on_menu: Opt(Type.Boolean()),
  user_id: Opt(Nullable(Type.Integer())),
  created_at: Opt(TimestampSchema),
  updated_at: Opt(TimestampSchema),
})

export const FolderSchema = Type.Object(
  {
    ...FolderBasicSchema.properties,
    parent: Opt(Nullable(FolderBasicSchema)),
    children: Opt(Type.Array(FolderBasicSchema)),
    translations: Opt(Type.Array(Type.Object({ lang_id: Type.String(), name: Type.String() }))),
    entityPermissions: Opt(Type.Array(EntityPermissionSchema)),
    user: Opt(Nullable(Type.Object({}, { additionalProperties: true }))),
  },
  { $id: 'Folder' },
)
export type Folder = Static<typeof FolderSchema>

const folderFields = {
  type: Type.Enum([...FOLDER_TYPES]),
  parent_id: Nullable(IdSchema),
  lang_id: Type.String({ minLength: 2, maxLength: 35 }),
  name: Type.String({ minLength: 1, maxLength: 255 }),
  icon_id: Nullable(IdSchema),
  show_on_menu: Type.Boolean(),
  entity_permissions: EntityPermissionElementsSchema,
}

export const CreateFolderBodySchema = Type.Object(
  {
    type: folderFields.type,
    parent_id: Opt(folderFields.parent_id),
    lang_id: Opt(folderFields.lang_id),
    name: folderFields.name,
    show_on_menu: Opt(folderFields.show_on_menu),
    icon_id: Opt(folderFields.icon_id),
    entity_permissions: Opt(folderFields.entity_permissions),
  },
  { additionalProperties: false },
)
export type CreateFolderBody = Static<typeof CreateFolderBodySchema>

/** `type` is accepted only when it equals the stored one (it is immutable). */
export const UpdateFolderBodySchema = Type.Partial(CreateFolderBodySchema, { additionalProperties: false })
export type UpdateFolderBody = Static<typeof UpdateFolderBodySchema>
