import type { Updateable } from 'kysely'
import { assertQuota } from '../../platform/limits/quotas.js'
import type { AppDeps } from '../../platform/app-module.js'
import { actingUserId, type Actor } from '../../platform/auth/actor.js'
import { hashPassword, UNUSABLE_PASSWORD_HASH, verifyPassword } from '../../platform/auth/passwords.js'
import { can } from '../../platform/auth/permissions.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { downgradeToMfaEnrollment, revokeUserTokens } from '../../platform/auth/tokens.js'
import { isUniqueViolation } from '../../platform/db/pg-errors.js'
import type { Db, UsersTable } from '../../platform/db/schema.js'
import { diff } from '../audit/index.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import {
  AppError,
  conflict,
  FieldErrorCollector,
  forbidden,
  notFound,
  type FieldErrors,
} from '../../platform/http/errors.js'
import type { UploadedFile } from '../../platform/http/multipart.js'
import { parseShowQuery, type RawListQuery } from '../../platform/query/parse-query.js'
import type { QueryContext } from '../../platform/query/resource.js'
import { listResource, showResource } from '../../platform/query/run-query.js'
import type { ProfilePictures } from './users-pictures.js'
import * as queries from './users.queries.js'
import { userResource } from './users.resource.js'
import {
  checkUserInput,
  CREDENTIAL_KEYS,
  deriveActive,
  exceedsOwnPermissions,
  HOLDER_BEYOND_ACTOR,
  loadRuleContext,
  normalizeDate,
  ROLE_BEYOND_ACTOR,
  roleWithinActor,
} from './users.rules.js'
import { BASIC_USER_FIELDS, type CreateUserBody, type UpdateUserBody, type UserInput } from './users.schemas.js'

export type UsersService = ReturnType<typeof createUsersService>
/** A create body whose password may be absent (SCIM provisioning); the API's body requires one. */
export type ProvisionedUserBody = Omit<CreateUserBody, 'password'> & { password?: string; external_id?: string | null }
/** An update body with the identity provider's id (SCIM provisioning only). */
export type ProvisionedUserUpdate = UpdateUserBody & { external_id?: string | null }

/** Keys a user may change on their own record without `users.update` (contract 00 §5: profile fields). */
const SELF_EDITABLE = new Set([
  'first_name',
  'last_name',
  'password',
  'lang_id',
  'street',
  'zipcode',
  'city',
  'email',
  'phone',
  'birthdate',
  'gender',
  'wants_email_notifications',
  'default_route',
])
/** Input keys that are stored under another column name, or not stored as sent. */
const NOT_COLUMNS = new Set(['password', 'request_password_change', 'old_password', 'profile_picture'])

export const usernameTaken = () =>
  conflict('username_taken', 'This username is already taken', { username: ['has already been taken'] })

/** Turns a unique violation on the username index into a 409 naming `username`. */
export async function guardUsername<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (isUniqueViolation(error, 'users_username_uniq')) throw usernameTaken()
    throw error
  }
}

/** Reads other users' extended fields on a single show (`users.viewDetails`, `users.administrate`). */
export const readsOthersDetails = (actor: Actor) => can(actor, 'users.viewDetails') || can(actor, 'users.administrate')

/** The request context of the resource queries; `extendedFields` unlocks the personal fields. */
export function userQueryContext(
  { db, config }: Pick<AppDeps, 'db'> & { config: Pick<AppDeps['config'], 'baseUrl' | 'appUrl'> },
  actor: Actor,
  extendedFields: boolean,
  trx: Db = db,
): QueryContext {
  return {
    db: trx,
    tenantId: actor.tenantId,
    actor,
    baseUrl: config.baseUrl,
    appUrl: config.appUrl,
    // extended fields are output by single shows only, but searched, filtered and sorted by whoever may read them
    flags: { extendedFields, readsDetails: readsOthersDetails(actor) },
  }
}

/** The basic fields of one user, as the create/update/action envelopes carry them. */
export async function presentBasicUser(deps: AppDeps, actor: Actor, id: number, trx: Db) {
  const ctx = userQueryContext(deps, actor, false, trx)
  const user = await queries.findPresentedUser(
    ctx,
    id,
    parseShowQuery(userResource, { selects: BASIC_USER_FIELDS.join(',') }, ctx),
  )
  if (!user) throw notFound('User')
  return user
}

const sameValue = (key: string, sent: unknown, stored: unknown) => {
  if (key === 'birthdate' || key === 'entering_date' || key === 'leaving_date') {
    return (
      (typeof sent === 'string' ? normalizeDate(sent) : sent) ===
      (typeof stored === 'string' ? stored.slice(0, 10) : stored)
    )
  }
  return sent === stored
}

export function createUsersService(deps: AppDeps, pictures: ProfilePictures) {
  const { db } = deps
  const mayViewDetails = (actor: Actor, id: number) => id === actor.userId || readsOthersDetails(actor)

  /** Lists non-deleted users (basic fields); `filter[text]` searches names, email and staff number. */
  async function listUsers(actor: Actor, query: RawListQuery) {
    requirePermission(actor, 'users.view')
    const base = queries.selectUsers(db, actor.tenantId).where('u.deleted_at', 'is', null)
    return listResource(userQueryContext(deps, actor, false), userResource, base, query)
  }

  /** Lists soft-deleted users, blacked-out ones included (user administration only). */
  async function listDeletedUsers(actor: Actor, query: RawListQuery) {
    requirePermission(actor, 'users.administrate')
    const base = queries.selectUsers(db, actor.tenantId).where('u.deleted_at', 'is not', null)
    return listResource(userQueryContext(deps, actor, false), userResource, base, query)
  }

  const userById = ({ tenantId, id }: { tenantId: number; id: number }) =>
    queries.selectUsers(db, tenantId).where('u.id', '=', id)

  /** Shows one user, deleted included; extended fields only for self, `users.viewDetails` or `users.administrate`. */
  async function getUser(actor: Actor, id: number, query: RawListQuery) {
    if (id !== actor.userId) requirePermission(actor, 'users.view')
    return showResource(
      userQueryContext(deps, actor, mayViewDetails(actor, id)),
      userResource,
      { build: userById, values: { id } },
      query,
      'User',
    )
  }

  /** The requester's own record with every extended field. */
  function getCurrentUser(actor: Actor, query: RawListQuery) {
    return getUser(actor, actor.userId, query)
  }

  /** Checks an uploaded picture by its bytes; adds a 422 problem when it is not an accepted image. */
  async function checkPicture(upload: UploadedFile | undefined, problems: FieldErrorCollector) {
    if (!upload) return undefined
    const type = await pictures.detect(upload)
    if (!type) problems.add('profile_picture', 'must be a JPEG, PNG, GIF or WebP image')
    return type
  }

  /** Stores a checked picture, runs `work`, and removes the new file again if `work` fails. */
  async function withPicture<T>(
    actor: Actor,
    upload: UploadedFile | undefined,
    extension: string | undefined,
    work: (name: string | undefined) => Promise<T>,
  ) {
    const name = upload && extension ? await pictures.keep(actor.tenantId, upload, extension) : undefined
    try {
      return await work(name)
    } catch (error) {
      await pictures.remove(actor.tenantId, name)
      throw error
    }
  }

  /**
   * Creates a user (optionally with a profile picture); `active` defaults to what the dates say. Without
   * a password (a SCIM client may send none) the account cannot log in with one.
   */
  async function createUser(actor: Actor, body: ProvisionedUserBody, upload?: UploadedFile) {
    requirePermission(actor, 'users.create')
    if (body.prevent_logout && !can(actor, 'users.administrate'))
      throw forbidden('Setting prevent_logout requires the "users.administrate" permission')
    const input: UserInput = { ...body }
    const problems = new FieldErrorCollector()
    const rules = await loadRuleContext(db, actor.tenantId, [input.role_id])
    checkUserInput(input, undefined, rules, problems)
    const picture = await checkPicture(upload, problems)
    problems.throwIfAny()
    if (input.role_id !== undefined && !roleWithinActor(actor, rules, input.role_id))
      throw exceedsOwnPermissions({ role_id: ROLE_BEYOND_ACTOR })

    const groupAccount = input.group_account ?? false
    const values = {
      ...columnsOf(input),
      tenant_id: actor.tenantId,
      username: input.username!,
      role_id: input.role_id!,
      password_hash: input.password === undefined ? UNUSABLE_PASSWORD_HASH : await hashPassword(input.password),
      first_name: groupAccount ? '' : input.first_name!.trim(),
      last_name: groupAccount ? '' : input.last_name!.trim(),
      active: input.active ?? deriveActive(input.entering_date, input.leaving_date),
      active_derived: input.active === undefined,
      password_change_required: input.request_password_change ?? false,
    }
    return withPicture(actor, upload, picture?.extension, (profilePicture) =>
      guardUsername(() =>
        db.transaction().execute(async (trx) => {
          await assertQuota(trx, actor.tenantId, queries.usersQuota, deps.config.limits.quotas)
          const { id } = await queries.insertUser(trx, { ...values, profile_picture: profilePicture ?? null })
          const { password_hash: _hash, tenant_id: _tenant, ...recorded } = values
          await recordDomainEvent(trx, {
            type: 'user.created',
            tenantId: actor.tenantId,
            actorId: actingUserId(actor),
            subjectType: 'user',
            subjectId: id,
            audit: diff(undefined, { ...recorded, profile_picture: profilePicture ?? null }),
          })
          return presentBasicUser(deps, actor, id, trx)
        }),
      ),
    )
  }

  /** Updates a user: self for profile fields, `users.update` for others (contract 10 update rules). */
  async function updateUser(
    actor: Actor,
    id: number,
    body: ProvisionedUserUpdate,
    upload?: UploadedFile,
    options: { ifVersion?: string } = {},
  ) {
    const self = id === actor.userId
    if (!self) requirePermission(actor, 'users.update')
    const administrate = can(actor, 'users.administrate')
    const current = await queries.findUserState(db, actor.tenantId, id)
    if (!current || current.deleted_at !== null) throw notFound('User')

    const currentFields: Record<string, unknown> = current
    const { old_password: oldPassword, profile_picture: removePicture, ...sent } = body
    const input: UserInput = { ...sent }
    if (self) {
      delete input.prevent_logout // never on oneself (contract 10; the spec's one field ignored silently)
      if (!can(actor, 'users.update')) {
        // a field outside the profile is refused, not dropped: the client must learn that nothing changed
        const locked = Object.entries(input).filter(
          ([key, value]) => !SELF_EDITABLE.has(key) && !sameValue(key, value, currentFields[key]),
        )
        if (locked.length > 0) {
          throw new AppError(
            403,
            'not_self_editable',
            `Changing ${locked.map(([k]) => k).join(', ')} of your own account requires the "users.update" permission`,
            Object.fromEntries(
              locked.map(([key]) => [
                key,
                ['is not a profile field: changing it on your own account requires the "users.update" permission'],
              ]),
            ),
          )
        }
      }
      if (!administrate) {
        delete input.role_id
        delete input.active
      }
    } else {
      if (input.prevent_logout !== undefined && input.prevent_logout !== current.prevent_logout && !administrate) {
        throw forbidden('Changing prevent_logout requires the "users.administrate" permission')
      }
      if (input.password !== undefined && !administrate)
        throw forbidden('Changing another user\'s password requires the "users.administrate" permission')
    }

    const problems = new FieldErrorCollector()
    if (self && input.password !== undefined && !administrate) {
      if (!oldPassword) problems.add('old_password', 'is required to change your password')
      else if (!(await verifyPassword(current.password_hash, oldPassword)))
        problems.add('old_password', 'is not your current password')
    }
    const rules = await loadRuleContext(db, actor.tenantId, [input.role_id, current.role_id])
    checkUserInput(input, current, rules, problems)
    const picture = await checkPicture(upload, problems)
    problems.throwIfAny()
    const refused: Record<string, string> = {}
    if (
      input.role_id !== undefined &&
      input.role_id !== current.role_id &&
      !roleWithinActor(actor, rules, input.role_id)
    )
      refused.role_id = ROLE_BEYOND_ACTOR
    if (!self && !roleWithinActor(actor, rules, current.role_id))
      for (const key of CREDENTIAL_KEYS)
        if (input[key] !== undefined && (key === 'password' || !sameValue(key, input[key], current[key])))
          refused[key] = HOLDER_BEYOND_ACTOR
    if (Object.keys(refused).length > 0) throw exceedsOwnPermissions(refused)

    const values: Updateable<UsersTable> = columnsOf(input)
    const groupAccount = input.group_account ?? current.group_account
    if (groupAccount) Object.assign(values, { first_name: '', last_name: '' })
    else
      for (const key of ['first_name', 'last_name'] as const)
        if (input[key] !== undefined) values[key] = input[key]!.trim()
    if (input.active !== undefined) Object.assign(values, { active: input.active, active_derived: false })
    else if (current.active_derived && (input.entering_date !== undefined || input.leaving_date !== undefined)) {
      values.active = deriveActive(
        input.entering_date !== undefined ? input.entering_date : current.entering_date,
        input.leaving_date !== undefined ? input.leaving_date : current.leaving_date,
      )
    }
    if (input.password !== undefined) {
      values.password_hash = await hashPassword(input.password)
      // a self-chosen password satisfies a pending "change your password"
      values.password_change_required =
        input.request_password_change ?? (self ? false : current.password_change_required)
    } else if (input.request_password_change !== undefined)
      values.password_change_required = input.request_password_change
    if (removePicture === null) values.profile_picture = null

    const result = await withPicture(actor, upload, picture?.extension, (profilePicture) =>
      guardUsername(() =>
        db.transaction().execute(async (trx) => {
          if (profilePicture) values.profile_picture = profilePicture
          // the stored row, locked: the audit record's "before" (the password hash is never recorded)
          const before = await queries.findStoredUser(trx, actor.tenantId, id, { forUpdate: true })
          const written = await queries.updateUser(trx, actor.tenantId, id, values, options.ifVersion)
          if (!written)
            throw new AppError(412, 'precondition_failed', 'The user was changed since the version named in If-Match')
          // a deactivated user's sessions end for good (issue 39); a new password ends every other
          // session of that user (the requester's own token survives)
          if (values.active === false) await revokeUserTokens(trx, actor.tenantId, id)
          else if (input.password !== undefined)
            await revokeUserTokens(trx, actor.tenantId, id, self ? actor.tokenId : undefined)
          // moved to a role that requires MFA: sessions without it may only enroll
          if (
            input.role_id !== undefined &&
            input.role_id !== current.role_id &&
            (await queries.roleRequiresMfa(trx, actor.tenantId, input.role_id))
          )
            await downgradeToMfaEnrollment(trx, actor.tenantId, { userId: id })
          await recordDomainEvent(trx, {
            type: 'user.updated',
            tenantId: actor.tenantId,
            actorId: actingUserId(actor),
            subjectType: 'user',
            subjectId: id,
            data: {
              changed: Object.keys(values)
                .filter((k) => k !== 'password_hash')
                .concat(input.password !== undefined ? ['password'] : []),
            },
            audit: diff(before, Object.fromEntries(Object.entries(values).filter(([k]) => k !== 'password_hash'))),
          })
          return presentBasicUser(deps, actor, id, trx)
        }),
      ),
    )
    if (
      values.profile_picture !== undefined &&
      current.profile_picture &&
      values.profile_picture !== current.profile_picture
    ) {
      await pictures.remove(actor.tenantId, current.profile_picture)
    }
    return result
  }

  /** The stored bytes of a user's picture (self or `users.view`); 404 for another name or none. */
  async function getProfilePicture(actor: Actor, id: number, fileName: string | undefined) {
    if (id !== actor.userId) requirePermission(actor, 'users.view')
    const user = await queries.findUserState(db, actor.tenantId, id)
    if (!user?.profile_picture || (fileName !== undefined && fileName !== user.profile_picture))
      throw notFound('Profile picture')
    const file = await pictures.open(actor.tenantId, user.profile_picture)
    if (!file) throw notFound('Profile picture')
    return { ...file, fileName: user.profile_picture }
  }

  /** The password-length rule on a raw body, so that a 422 of the schema names a short password too. */
  async function passwordProblems(actor: Actor | undefined, body: unknown): Promise<FieldErrors | undefined> {
    const password = typeof body === 'object' && body !== null && 'password' in body ? body.password : undefined
    if (!actor || typeof password !== 'string') return undefined
    const minLength = await queries.findPasswordMinLength(db, actor.tenantId)
    return password.length < minLength ? { password: [`must be at least ${minLength} characters`] } : undefined
  }

  return {
    listUsers,
    listDeletedUsers,
    getUser,
    getCurrentUser,
    createUser,
    updateUser,
    getProfilePicture,
    passwordProblems,
  }
}

/** The input keys stored as columns of the same name. */
function columnsOf(input: UserInput): Updateable<UsersTable> {
  const values: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(input)) {
    if (NOT_COLUMNS.has(key) || key === 'first_name' || key === 'last_name' || key === 'active') continue
    values[key] = value
  }
  return values as Updateable<UsersTable>
}
