import { randomBytes } from 'node:crypto'
import { deleteUserSubscriptions } from '../notifications/index.js'
import type { AppDeps } from '../../platform/app-module.js'
import { actingUserId, type Actor } from '../../platform/auth/actor.js'
import { UNUSABLE_PASSWORD_HASH } from '../../platform/auth/passwords.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import { revokeUserTokens } from '../../platform/auth/tokens.js'
import { diff } from '../audit/index.js'
import { erasePersonalData } from './users-personal-data.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { AppError, FieldErrorCollector, forbidden, notFound } from '../../platform/http/errors.js'
import { assertQuota } from '../../platform/limits/quotas.js'
import type { DataExports } from './users-data-export.js'
import type { ProfilePictures } from './users-pictures.js'
import * as queries from './users.queries.js'
import { exceedsOwnPermissions, loadRuleContext, ROLE_BEYOND_ACTOR, roleWithinActor } from './users.rules.js'
import type { RestoreUserBody } from './users.schemas.js'
import { presentBasicUser } from './users.service.js'

/** The first name of an erased account; its last name is a stable code unique in the tenant. */
export const PSEUDONYM_FIRST_NAME = 'Former employee'

/** Accounts per batch of the automatic erasure (each in its own transaction). */
const ERASE_BATCH = 100

export type UsersLifecycleService = ReturnType<typeof createUsersLifecycleService>

/** Every personal column black-out clears (contract 10), besides username, names, password and picture. */
const PERSONAL_COLUMNS = [
  'street',
  'zipcode',
  'city',
  'email',
  'phone',
  'birthdate',
  'gender',
  'entering_date',
  'leaving_date',
  'staff_number',
  'default_route',
  'external_id',
] as const

export function createUsersLifecycleService(deps: AppDeps, pictures: ProfilePictures, exports: DataExports) {
  const { db } = deps
  const event = (actor: Actor, type: string, id: number) => ({
    type,
    tenantId: actor.tenantId,
    actorId: actingUserId(actor),
    subjectType: 'user',
    subjectId: id,
  })

  /** Marks a user for logout: their existing tokens stop working. Self unless protected, else `users.administrate`. */
  async function logoutUser(actor: Actor, id: number) {
    const self = id === actor.userId
    if (!self) requirePermission(actor, 'users.administrate')
    return db.transaction().execute(async (trx) => {
      const user = await queries.findUserState(trx, actor.tenantId, id, { forUpdate: true })
      if (!user || user.deleted_at !== null) throw notFound('User')
      if (self && user.prevent_logout)
        throw forbidden('This account is protected from logging itself out', 'logout_prevented')
      await queries.markLogoutRequested(trx, actor.tenantId, id)
      await deleteUserSubscriptions(trx, actor.tenantId, id)
      await recordDomainEvent(trx, event(actor, 'user.loggedOut', id))
      return presentBasicUser(deps, actor, id, trx)
    })
  }

  /** Soft-deletes a user and revokes their tokens; refuses the requester's own account. */
  async function deleteUser(actor: Actor, id: number): Promise<null> {
    requirePermission(actor, 'users.delete')
    if (id === actor.userId) throw forbidden('You cannot delete your own account', 'cannot_delete_self')
    await db.transaction().execute(async (trx) => {
      const user = await queries.findUserState(trx, actor.tenantId, id, { forUpdate: true })
      if (!user || user.deleted_at !== null) throw notFound('User')
      await queries.updateUser(trx, actor.tenantId, id, { deleted_at: queries.statementTime() })
      await revokeUserTokens(trx, actor.tenantId, id)
      await deleteUserSubscriptions(trx, actor.tenantId, id)
      const deleted = await queries.findUserState(trx, actor.tenantId, id)
      await recordDomainEvent(trx, {
        ...event(actor, 'user.deleted', id),
        audit: diff(user, { deleted_at: deleted?.deleted_at }),
      })
    })
    return null
  }

  /**
   * Restores a soft-deleted user, optionally with a new (active) role; old tokens stay revoked. The user
   * counts again: refused (403 `quota_exceeded`) when the tenant's users quota is full.
   */
  async function restoreUser(actor: Actor, id: number, body: RestoreUserBody) {
    requirePermission(actor, 'users.administrate')
    if (body.role_id !== undefined) {
      const problems = new FieldErrorCollector()
      const rules = await loadRuleContext(db, actor.tenantId, [body.role_id])
      const active = rules.roles.get(body.role_id)
      if (active === undefined) problems.add('role_id', 'does not exist')
      else if (!active) problems.add('role_id', 'is an inactive role')
      problems.throwIfAny()
      if (!roleWithinActor(actor, rules, body.role_id)) throw exceedsOwnPermissions({ role_id: ROLE_BEYOND_ACTOR })
    }
    return db.transaction().execute(async (trx) => {
      const user = await queries.findUserState(trx, actor.tenantId, id, { forUpdate: true })
      if (!user) throw notFound('User')
      if (user.blacked_out_at !== null) throw new AppError(422, 'blacked_out', 'A blacked-out user cannot be restored')
      if (user.deleted_at === null) throw new AppError(422, 'not_deleted', 'This user is not deleted')
      await assertQuota(trx, actor.tenantId, queries.usersQuota, deps.config.limits.quotas)
      await queries.updateUser(trx, actor.tenantId, id, {
        deleted_at: null,
        ...(body.role_id !== undefined ? { role_id: body.role_id } : {}),
      })
      await recordDomainEvent(trx, {
        ...event(actor, 'user.restored', id),
        audit: diff(user, { deleted_at: null, role_id: body.role_id }),
      })
      return presentBasicUser(deps, actor, id, trx)
    })
  }

  /**
   * Irreversibly erases a user (active or deleted; GDPR Art. 17): the row and its id stay so that
   * authored content keeps its author, now shown under a pseudonym ("Former employee 3f9a2c1b"); every
   * personal value of every tenant table is deleted or pseudonymised (users-personal-data.ts)
   * and the profile picture's file is deleted.
   */
  async function blackOutUser(actor: Actor, id: number) {
    requirePermission(actor, 'users.administrate')
    if (id === actor.userId) throw forbidden('You cannot black out your own account', 'cannot_black_out_self')
    await eraseAccount(actor.tenantId, id, actingUserId(actor))
    return presentBasicUser(deps, actor, id, db)
  }

  /** The erasure itself, by an administrator (`actorId`) or by the retention sweep (null). */
  async function eraseAccount(tenantId: number, id: number, actorId: number | null): Promise<void> {
    const { picture, archives } = await db.transaction().execute(async (trx) => {
      const user = await queries.findUserState(trx, tenantId, id, { forUpdate: true })
      if (!user) throw notFound('User')
      if (user.blacked_out_at !== null)
        throw new AppError(422, 'already_blacked_out', 'This user is already blacked out')
      // every other table first: some steps read the person's rows (their email, their sessions' IPs)
      const archives = await exports.eraseFor(trx, tenantId, id)
      await erasePersonalData(trx, { tenantId, userId: id, username: user.username, email: user.email })
      const code = randomBytes(8).toString('hex')
      await queries.updateUser(trx, tenantId, id, {
        ...Object.fromEntries(PERSONAL_COLUMNS.map((c) => [c, null])),
        username: `blackout-${code}`,
        // the pseudonym authored content and audit entries are shown under (stable, unique in the tenant)
        first_name: PSEUDONYM_FIRST_NAME,
        last_name: code.slice(0, 8),
        profile_picture: null,
        password_hash: UNUSABLE_PASSWORD_HASH,
        password_change_required: false,
        wants_email_notifications: false,
        prevent_logout: false,
        active: false,
        active_derived: false,
        logout_requested_at: queries.statementTime(),
        deleted_at: user.deleted_at ?? queries.statementTime(),
        blacked_out_at: queries.statementTime(),
      })
      await queries.deleteLoginFailures(trx, tenantId, user.username)
      await recordDomainEvent(trx, {
        type: 'user.blackedOut',
        tenantId,
        actorId,
        subjectType: 'user',
        subjectId: id,
      })
      return { picture: user.profile_picture, archives }
    })
    await pictures.remove(tenantId, picture)
    await exports.removeFiles(tenantId, archives)
  }

  /**
   * The retention sweep's part (data class `deactivated_accounts`): erases the accounts deactivated
   * before `cutOff` — deleted then, or inactive with a leaving date then (an account switched off by hand
   * without a leaving date has no date to count from: decision erasure-and-personal-data.md). Bounded
   * batches, one transaction per account; a dry run only counts.
   */
  async function eraseDeactivatedBefore(tenantId: number, cutOff: Date, dryRun: boolean): Promise<number> {
    const due = queries.deactivatedBefore(db, tenantId, cutOff)
    if (dryRun) return Number((await due.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirst())?.n ?? 0)
    let erased = 0
    for (;;) {
      const batch = await due.select('id').orderBy('id').limit(ERASE_BATCH).execute()
      for (const { id } of batch) {
        // another node's sweep may have erased it meanwhile: that is the same outcome
        const done = await eraseAccount(tenantId, Number(id), null).then(
          () => true,
          (error: unknown) => {
            if (error instanceof AppError && error.code === 'already_blacked_out') return false
            throw error
          },
        )
        if (done) erased++
      }
      if (batch.length < ERASE_BATCH) return erased
    }
  }

  return { logoutUser, deleteUser, restoreUser, blackOutUser, eraseDeactivatedBefore }
}
