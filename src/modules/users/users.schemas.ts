import { Type, type Static } from 'typebox'
import {
  Envelope,
  EXPECTED,
  IdSchema,
  Nullable,
  NullableTimestampSchema,
  TimestampSchema,
} from '../../platform/http/schemas.js'

const Opt = Type.Optional

/** A user as returned by the API; every field is optional because `selects` may drop it. */
export const UserSchema = Type.Object(
  {
    id: Opt(Type.Integer()),
    username: Opt(Type.String()),
    first_name: Opt(Type.String()),
    last_name: Opt(Type.String()),
    full_name: Opt(Type.String()),
    active: Opt(Type.Boolean()),
    group_account: Opt(Type.Boolean()),
    role_id: Opt(Type.Integer()),
    lang_id: Opt(Nullable(Type.String())),
    profile_picture: Opt(Nullable(Type.String())),
    created_at: Opt(TimestampSchema),
    updated_at: Opt(TimestampSchema),
    deleted_at: Opt(NullableTimestampSchema),
    blacked_out_at: Opt(NullableTimestampSchema),
    street: Opt(Nullable(Type.String())),
    zipcode: Opt(Nullable(Type.String())),
    city: Opt(Nullable(Type.String())),
    email: Opt(Nullable(Type.String())),
    phone: Opt(Nullable(Type.String())),
    birthdate: Opt(NullableTimestampSchema),
    gender: Opt(Nullable(Type.String())),
    entering_date: Opt(NullableTimestampSchema),
    leaving_date: Opt(NullableTimestampSchema),
    staff_number: Opt(Nullable(Type.String())),
    wants_email_notifications: Opt(Type.Boolean()),
    default_route: Opt(Nullable(Type.String())),
    prevent_logout: Opt(Type.Boolean()),
    profile_picture_url: Opt(Nullable(Type.String())),
    static_url: Opt(Type.String()),
    url: Opt(Type.String()),
    url_context: Opt(
      Type.Object({ type: Type.String(), id: Type.Integer(), title: Type.String(), url: Type.String() }),
    ),
    role: Opt(Nullable(Type.Object({}, { additionalProperties: true }))),
    language: Opt(Nullable(Type.Object({ id: Type.String(), name: Type.String() }))),
    departments: Opt(Type.Array(Type.Object({}, { additionalProperties: true }))),
    acceptedPolicies: Opt(Type.Array(Type.Object({}, { additionalProperties: true }))),
    entityPermissions: Opt(Type.Array(Type.Object({}, { additionalProperties: true }))),
  },
  { $id: 'User' },
)
export type User = Static<typeof UserSchema>

/** The basic fields of a user embedded elsewhere (login answer, relations). */
export const BASIC_USER_FIELDS = [
  'id',
  'username',
  'first_name',
  'last_name',
  'full_name',
  'active',
  'group_account',
  'role_id',
  'lang_id',
  'profile_picture',
  'created_at',
  'updated_at',
  'deleted_at',
  'blacked_out_at',
] as const

export const GENDERS = ['male', 'female', 'diverse'] as const
export const USERNAME_PATTERN = '^[A-Za-z0-9._@+-]+$'
export const PROFILE_PICTURE_MAX_BYTES = 5 * 1024 * 1024
export const CSV_MAX_BYTES = 5 * 1024 * 1024
export const CSV_MAX_ROWS = 10_000

const DateInputSchema = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}([ T]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:?\\d{2})?)?$',
  maxLength: 40,
  [EXPECTED]: 'a date YYYY-MM-DD',
  description: '`YYYY-MM-DD` (a timestamp form is accepted; its date part is used)',
})
const Text = (maxLength = 255) => Type.String({ maxLength })

/** Every key a create body accepts; update accepts the same keys, all optional, plus `old_password`. */
export const userInputFields = {
  username: Type.String({
    minLength: 3,
    maxLength: 255,
    pattern: USERNAME_PATTERN,
    [EXPECTED]: 'letters, digits and . _ @ + - only',
  }),
  password: Type.String({
    minLength: 1,
    maxLength: 256,
    description: 'min length: tenant setting `password_min_length` (default 8)',
  }),
  first_name: Text(),
  last_name: Text(),
  role_id: IdSchema,
  lang_id: Nullable(Type.String({ maxLength: 20 })),
  active: Type.Boolean({ description: 'default: derived from entering_date/leaving_date, else true' }),
  group_account: Type.Boolean(),
  request_password_change: Type.Boolean(),
  street: Nullable(Text()),
  zipcode: Nullable(Text(32)),
  city: Nullable(Text()),
  email: Nullable(Type.String({ format: 'email', maxLength: 255 })),
  phone: Nullable(Text(64)),
  staff_number: Nullable(Text(64)),
  birthdate: Nullable(DateInputSchema),
  entering_date: Nullable(DateInputSchema),
  leaving_date: Nullable(DateInputSchema),
  gender: Nullable(Type.Union(GENDERS.map((g) => Type.Literal(g)))),
  wants_email_notifications: Type.Boolean(),
  default_route: Nullable(Text(2000)),
  prevent_logout: Type.Boolean(),
}
type InputFields = typeof userInputFields

const optionalAll = <T extends Record<string, import('typebox').TSchema>>(fields: T) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Opt(v)])) as {
    [K in keyof T]: import('typebox').TOptional<T[K]>
  }

const { username, password, role_id: roleId, ...optionalCreateFields } = userInputFields
const JsonPicture = Opt(Type.Null({ description: 'send the image itself as multipart/form-data; null = no picture' }))
const FilePicture = Opt(
  Type.String({ format: 'binary', description: 'JPEG, PNG, GIF or WebP, at most 5 MiB (checked by content)' }),
)

const createProperties = { username, password, role_id: roleId, ...optionalAll(optionalCreateFields) }
export const CreateUserBodySchema = Type.Object(
  { ...createProperties, profile_picture: JsonPicture },
  { additionalProperties: false },
)
export const CreateUserMultipartSchema = Type.Object(
  { ...createProperties, profile_picture: FilePicture },
  { additionalProperties: false },
)
/** JSON or multipart (where `profile_picture` is the file part, already moved to `uploads`). */
export type CreateUserBody = Static<typeof CreateUserBodySchema> | Static<typeof CreateUserMultipartSchema>

const updateProperties = { ...optionalAll(userInputFields), old_password: Opt(Type.String({ maxLength: 256 })) }
export const UpdateUserBodySchema = Type.Object(
  { ...updateProperties, profile_picture: JsonPicture },
  { additionalProperties: false },
)
export const UpdateUserMultipartSchema = Type.Object(
  { ...updateProperties, profile_picture: FilePicture },
  { additionalProperties: false },
)
/** JSON or multipart (where `profile_picture` is the file part, already moved to `uploads`). */
export type UpdateUserBody = Static<typeof UpdateUserBodySchema> | Static<typeof UpdateUserMultipartSchema>
export type UserInput = Partial<{ [K in keyof InputFields]: Static<InputFields[K]> }>

export const RestoreUserBodySchema = Type.Object({ role_id: Opt(IdSchema) }, { additionalProperties: false })
export type RestoreUserBody = Static<typeof RestoreUserBodySchema>

export const UserEnvelopeSchema = Envelope(UserSchema)
export const NullEnvelopeSchema = Envelope(Type.Null())

export const ProfilePictureParamsSchema = Type.Object({
  id: IdSchema,
  fileName: Type.String({ maxLength: 255, description: 'Any name (ignored): lets a browser save the file under it' }),
})

/** Keys a CSV may carry (contract 10): the template's eight plus these profile keys. */
export const TEMPLATE_KEYS = [
  'username',
  'password',
  'first_name',
  'last_name',
  'active',
  'group_account',
  'role_id',
  'lang_id',
] as const
export const IMPORTABLE_KEYS = [
  ...TEMPLATE_KEYS,
  'email',
  'phone',
  'staff_number',
  'street',
  'zipcode',
  'city',
  'gender',
  'birthdate',
  'entering_date',
  'leaving_date',
] as const
export type ImportableKey = (typeof IMPORTABLE_KEYS)[number]

const headerRemaps = Object.fromEntries(
  IMPORTABLE_KEYS.map((k) => [
    k,
    Opt(Type.String({ minLength: 1, maxLength: 255, description: `CSV header to read \`${k}\` from` })),
  ]),
)

export const ImportTemplateQuerySchema = Type.Object(
  Object.fromEntries(TEMPLATE_KEYS.map((k) => [k, Opt(Type.String({ minLength: 1, maxLength: 255 }))])),
  { additionalProperties: false },
)

export const ImportCsvBodySchema = Type.Object(
  {
    user_data_csv: Opt(
      Type.String({
        format: 'binary',
        description: 'UTF-8 CSV (BOM allowed, `,` or `;`), at most 5 MiB and 10,000 data rows; required',
      }),
    ),
    update_users: Opt(Type.Boolean()),
    delete_users: Opt(Type.Boolean()),
    whitespace_to_null: Opt(Type.Boolean()),
    ...headerRemaps,
  },
  { additionalProperties: false },
)
export type ImportCsvBody = Static<typeof ImportCsvBodySchema>

const Row = Type.Object({}, { additionalProperties: true })
export const ImportCsvResultSchema = Envelope(
  Type.Object({
    new_users: Type.Array(Row),
    update_users: Type.Array(Row),
    delete_users: Type.Array(
      Type.Object({ id: Type.Integer(), username: Type.String(), first_name: Type.String(), last_name: Type.String() }),
    ),
  }),
)
