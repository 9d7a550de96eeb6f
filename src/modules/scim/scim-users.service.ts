import { compileValidator } from '../../platform/validation/validator.js'
import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { revokeUserTokens } from '../../platform/auth/tokens.js'
import { AppError } from '../../platform/http/errors.js'
import { languageIds as storedLanguageIds } from '../languages/index.js'
import { createUserServices, departmentsOfUsers, USERNAME_PATTERN, type ProvisionedUserUpdate } from '../users/index.js'
import { project, projects } from './scim.attributes.js'
import { ScimError } from './scim.errors.js'
import { applyPatch, standardOperations, type PatchRules } from './scim.patch.js'
import {
  booleanOf,
  checkIfMatch,
  singleVersion,
  etag,
  listResponse,
  meta,
  listPage,
  parseId,
  type Meta,
} from './scim.resources.js'
import {
  CORE_USER,
  ENTERPRISE_USER,
  type PatchOpBody,
  type ScimListQuery,
  type ScimShowQuery,
  ScimUserInputSchema,
  type ScimUserInput,
} from './scim.schemas.js'
import * as queries from './scim-users.queries.js'

const ENTERPRISE = ENTERPRISE_USER.toLowerCase()

const SORTABLE: Record<string, string> = {
  id: 'u.id',
  username: 'u.username',
  externalid: 'u.external_id',
  'name.givenname': 'u.first_name',
  'name.familyname': 'u.last_name',
  displayname: 'u.first_name',
  active: 'u.active',
  preferredlanguage: 'u.lang_id',
  'emails.value': 'u.email',
  emails: 'u.email',
  'meta.created': 'u.created_at',
  'meta.lastmodified': 'u.updated_at',
}

/** PATCH paths of a User: RFC 7643's attributes (those not stored are accepted and ignored). */
const PATCH_RULES: PatchRules = {
  attributes: Object.fromEntries(
    [
      'userName',
      'externalId',
      'displayName',
      'nickName',
      'profileUrl',
      'title',
      'userType',
      'preferredLanguage',
      'locale',
      'timezone',
      'active',
      'password',
      'name',
      'name.givenName',
      'name.familyName',
      'name.formatted',
      'name.middleName',
      'name.honorificPrefix',
      'name.honorificSuffix',
      'emails',
      'phoneNumbers',
      'ims',
      'photos',
      'addresses',
      'entitlements',
      'roles',
      'x509Certificates',
      'groups',
      'id',
      'meta',
      ...['emails', 'phoneNumbers', 'ims', 'photos', 'addresses', 'entitlements', 'roles'].flatMap((a) =>
        ['value', 'type', 'primary', 'display'].map((s) => `${a}.${s}`),
      ),
      ...['streetAddress', 'locality', 'region', 'postalCode', 'country', 'formatted'].map((s) => `addresses.${s}`),
      ENTERPRISE_USER,
      ...['employeeNumber', 'costCenter', 'organization', 'division', 'department', 'manager'].map(
        (a) => `${ENTERPRISE_USER}:${a}`,
      ),
    ].map((name) => {
      const parts = name.startsWith('urn:') ? [name] : name.split('.')
      return [name.toLowerCase(), parts.at(-1)!.split(':').at(-1)!]
    }),
  ),
  readOnly: new Set(['id', 'meta', 'groups']),
  booleans: new Set(['active', 'emails.primary', 'phonenumbers.primary', 'addresses.primary', 'roles.primary']),
  schemas: [CORE_USER, ENTERPRISE_USER],
}
// the extension itself keeps its full name
PATCH_RULES.attributes[ENTERPRISE] = ENTERPRISE_USER

type UserRow = {
  id: number
  username: string
  first_name: string
  last_name: string
  email: string | null
  phone: string | null
  active: boolean
  lang_id: string | null
  staff_number: string | null
  external_id: string | null
  created_at: string
  updated_at: string
  version: string
}

interface MultiValue {
  value?: unknown
  type?: unknown
  primary?: unknown
}

export interface ScimUser {
  schemas: string[]
  id: string
  externalId?: string
  userName: string
  name: { givenName: string; familyName: string; formatted: string }
  displayName: string
  emails?: MultiValue[]
  phoneNumbers?: MultiValue[]
  active: boolean
  preferredLanguage?: string
  groups?: Array<{ value: string; display: string; $ref: string }>
  [ENTERPRISE_USER]?: { employeeNumber?: string }
  meta: Meta
}

/** The one value of a multi-valued attribute to store: the primary one, else the "work" one, else the first. */
function chosenValue(values: unknown, attribute: string): string | null {
  if (values === undefined || values === null) return null
  if (!Array.isArray(values)) throw new ScimError(400, `${attribute} must be an array`, 'invalidValue')
  const items = values.filter((v): v is MultiValue => typeof v === 'object' && v !== null)
  const chosen =
    items.find((v) => v.primary === true || v.primary === 'True' || v.primary === 'true') ??
    items.find((v) => typeof v.type === 'string' && v.type.toLowerCase() === 'work') ??
    items[0]
  if (!chosen || chosen.value === undefined || chosen.value === null || chosen.value === '') return null
  if (typeof chosen.value !== 'string') throw new ScimError(400, `${attribute} value must be a string`, 'invalidValue')
  return chosen.value
}

const USERNAME = new RegExp(USERNAME_PATTERN)
const userInput = compileValidator(ScimUserInputSchema)

/** A patched user, checked as a PUT body would be (a PATCH may set any attribute to any JSON value). */
function patchedInput(value: unknown): ScimUserInput {
  if (userInput.Check(value)) return value
  const [first] = userInput.Errors(value)
  throw new ScimError(
    400,
    `The user after the PATCH is not valid: ${first ? `${first.instancePath || '/'} ${first.message}` : 'wrong value'}`,
    'invalidValue',
  )
}
const EMAIL = /^[^\s@]+@[^\s@]+$/

export function createScimUsersService(deps: AppDeps) {
  const { db } = deps
  const { users, lifecycle } = createUserServices(deps)
  const base = `${deps.config.baseUrl}/scim/v2`
  let languages: Promise<string[]> | undefined
  const languageIds = () => (languages ??= storedLanguageIds(db))

  /** `preferredLanguage` (RFC 7231 language tag) → a language of the platform, or null when it has none such. */
  async function languageOf(tag: unknown): Promise<string | null> {
    if (typeof tag !== 'string' || tag === '') return null
    const wanted = tag.replace(/_/g, '-').toLowerCase()
    const ids = await languageIds()
    return (
      ids.find((id) => id.toLowerCase() === wanted) ??
      ids.find((id) => id.toLowerCase().split('-')[0] === wanted.split('-')[0]) ??
      null
    )
  }

  function present(row: UserRow, groups?: ScimUser['groups']): ScimUser {
    const formatted = `${row.first_name} ${row.last_name}`.trim()
    const user: ScimUser = {
      schemas: row.staff_number !== null ? [CORE_USER, ENTERPRISE_USER] : [CORE_USER],
      id: String(row.id),
      userName: row.username,
      name: { givenName: row.first_name, familyName: row.last_name, formatted },
      displayName: formatted || row.username,
      active: row.active,
      meta: meta('User', base, 'Users', row),
    }
    if (row.external_id !== null) user.externalId = row.external_id
    if (row.email !== null) user.emails = [{ value: row.email, type: 'work', primary: true }]
    if (row.phone !== null) user.phoneNumbers = [{ value: row.phone, type: 'work', primary: true }]
    if (row.lang_id !== null) user.preferredLanguage = row.lang_id
    if (row.staff_number !== null) user[ENTERPRISE_USER] = { employeeNumber: row.staff_number }
    if (groups) user.groups = groups
    return user
  }

  /** The departments of a page of users, in one statement. */
  async function groupsOf(tenantId: number, ids: number[]): Promise<Map<number, NonNullable<ScimUser['groups']>>> {
    const byUser = new Map<number, NonNullable<ScimUser['groups']>>()
    if (ids.length === 0) return byUser
    const rows = await departmentsOfUsers(db, tenantId, ids)
    for (const row of rows) {
      const list = byUser.get(row.user_id) ?? []
      list.push({ value: String(row.id), display: row.name, $ref: `${base}/Groups/${row.id}` })
      byUser.set(row.user_id, list)
    }
    return byUser
  }

  async function load(actor: Actor, id: number, withGroups = true): Promise<ScimUser> {
    const row: UserRow | undefined = await queries.findScimUser(db, actor.tenantId, id)
    if (!row) throw new ScimError(404, `User ${id} not found`)
    const groups = withGroups ? ((await groupsOf(actor.tenantId, [id])).get(id) ?? []) : undefined
    return present(row, groups)
  }

  /** GET /Users: the filter runs as SQL; one page and its total. */
  async function listUsers(actor: Actor, query: ScimListQuery) {
    const filter = query.filter ? queries.usersFilter(actor.tenantId, query.filter) : undefined
    const listed = listPage(query, SORTABLE, CORE_USER)
    const { total, rows } = await queries.scimUsersPage(db, actor.tenantId, filter, listed)
    const groups = projects(query, 'groups', CORE_USER)
      ? await groupsOf(
          actor.tenantId,
          rows.map((r) => r.id),
        )
      : undefined
    const resources = rows.map((row) =>
      project({ ...present(row, groups ? (groups.get(row.id) ?? []) : undefined) }, query, CORE_USER, [
        ENTERPRISE_USER,
      ]),
    )
    return listResponse(resources, total, listed.startIndex)
  }

  /** GET /Users/{id}. */
  async function getUser(actor: Actor, rawId: string, query: ScimShowQuery) {
    const user = await load(actor, parseId(rawId, 'User'), projects(query, 'groups', CORE_USER))
    return { resource: project({ ...user }, query, CORE_USER, [ENTERPRISE_USER]), etag: user.meta.version }
  }

  /** The users module's fields of a SCIM User (PUT and POST: absent attributes are cleared). */
  async function fieldsOf(input: ScimUserInput, current?: ScimUser) {
    const userName = input.userName
    if (userName.length < 3 || !USERNAME.test(userName))
      throw new ScimError(400, 'userName must be 3–255 characters: letters, digits and . _ @ + - only', 'invalidValue')
    const display = typeof input.displayName === 'string' ? input.displayName.trim().split(/\s+/) : []
    const given = input.name?.givenName?.trim() || display[0] || current?.name.givenName || userName
    const family = input.name?.familyName?.trim() || display.slice(1).join(' ') || current?.name.familyName || '-'
    const email = chosenValue(input.emails, 'emails')
    if (email !== null && (!EMAIL.test(email) || email.length > 255))
      throw new ScimError(400, 'emails value must be an email address', 'invalidValue')
    const phone = chosenValue(input.phoneNumbers, 'phoneNumbers')
    if (phone !== null && phone.length > 64)
      throw new ScimError(400, 'phoneNumbers value must be at most 64 characters', 'invalidValue')
    const enterprise = input[ENTERPRISE_USER]
    const staffNumber = enterprise?.employeeNumber ?? null
    const fields: ProvisionedUserUpdate = {
      username: userName,
      first_name: given.slice(0, 255),
      last_name: family.slice(0, 255),
      email,
      phone,
      lang_id: await languageOf(input.preferredLanguage),
      staff_number: staffNumber === null ? null : String(staffNumber),
      external_id: input.externalId ?? null,
    }
    const active = booleanOf(input.active, 'active')
    if (active !== undefined) fields.active = active
    if (typeof input.password === 'string') fields.password = input.password
    return fields
  }

  /** The API's errors on a user change, as SCIM errors (409 `uniqueness` for a taken userName). */
  async function translated<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      if (error instanceof AppError && error.code === 'precondition_failed')
        throw new ScimError(412, 'The resource was changed since the version named in If-Match')
      if (error instanceof AppError && error.code === 'username_taken')
        throw new ScimError(
          409,
          'userName is already taken in this tenant (a deleted user keeps it until restored with POST /api/users/restore/{id} or blacked out)',
          'uniqueness',
        )
      throw error
    }
  }

  /** POST /Users: a user with the token's default role, through the users service (events, audit). */
  async function createUser(actor: Actor, roleId: number, input: ScimUserInput) {
    const { password, ...fields } = await fieldsOf(input)
    const created = await translated(() =>
      users.createUser(actor, {
        ...fields,
        username: fields.username!,
        role_id: roleId,
        ...(password === undefined ? {} : { password }),
      }),
    )
    const id = Number(created.id)
    const user = await load(actor, id)
    return { resource: user, etag: user.meta.version, location: user.meta.location }
  }

  /** Only the fields whose value differs from the stored user (an unchanged PUT writes nothing). */
  function changes(fields: ProvisionedUserUpdate, current: ScimUser): ProvisionedUserUpdate {
    const stored: Record<string, unknown> = {
      username: current.userName,
      first_name: current.name.givenName,
      last_name: current.name.familyName,
      email: current.emails?.[0]?.value ?? null,
      phone: current.phoneNumbers?.[0]?.value ?? null,
      lang_id: current.preferredLanguage ?? null,
      staff_number: current[ENTERPRISE_USER]?.employeeNumber ?? null,
      external_id: current.externalId ?? null,
      active: current.active,
    }
    return Object.fromEntries(
      Object.entries(fields).filter(([key, value]) => key === 'password' || stored[key] !== value),
    )
  }

  async function update(actor: Actor, id: number, current: ScimUser, fields: ProvisionedUserUpdate, ifMatch?: string) {
    const changed = changes(fields, current)
    if (Object.keys(changed).length > 0) {
      // If-Match holds in the UPDATE itself (issue 39): of concurrent changes naming one version, one wins
      const ifVersion = singleVersion(ifMatch)
      await translated(() => users.updateUser(actor, id, changed, undefined, { ifVersion }))
      // a deactivated user's sessions end now, and stay ended when the user is activated again
      if (changed.active === false) await revokeUserTokens(db, actor.tenantId, id)
    }
    const user = await load(actor, id)
    return { resource: user, etag: user.meta.version }
  }

  /** PUT /Users/{id}: the whole user as sent (Okta). */
  async function replaceUser(actor: Actor, rawId: string, input: ScimUserInput, ifMatch?: string) {
    const id = parseId(rawId, 'User')
    const current = await load(actor, id, false)
    checkIfMatch(ifMatch, current.meta.version)
    if (input.id !== undefined && input.id !== current.id)
      throw new ScimError(400, 'id is read-only and differs from the path', 'mutability')
    return update(actor, id, current, await fieldsOf(input, current), ifMatch)
  }

  /** PATCH /Users/{id}: add/replace/remove with or without path (Entra ID's and Okta's forms too). */
  async function patchUser(actor: Actor, rawId: string, body: PatchOpBody, ifMatch?: string) {
    const id = parseId(rawId, 'User')
    const current = await load(actor, id, false)
    checkIfMatch(ifMatch, current.meta.version)
    const ops = standardOperations(body, PATCH_RULES, current.id)
    const metaAsDates = {
      ...current.meta,
      created: new Date(current.meta.created),
      lastModified: new Date(current.meta.lastModified),
    }
    const patched = applyPatch({ ...current, meta: metaAsDates }, ops)
    const { meta: _meta, ...record } = patched
    // a removed name keeps the stored one (a personal account needs both); removed single values are cleared
    const fields = await fieldsOf(patchedInput(record), current)
    return update(actor, id, current, fields, ifMatch)
  }

  /** DELETE /Users/{id}: a soft delete (restorable with POST /api/users/restore/{id}). */
  async function deleteUser(actor: Actor, rawId: string, ifMatch?: string): Promise<void> {
    const id = parseId(rawId, 'User')
    const current = await load(actor, id, false)
    checkIfMatch(ifMatch, current.meta.version)
    await lifecycle.deleteUser(actor, id)
  }

  return { listUsers, getUser, createUser, replaceUser, patchUser, deleteUser, etag }
}
export type ScimUsersService = ReturnType<typeof createScimUsersService>
