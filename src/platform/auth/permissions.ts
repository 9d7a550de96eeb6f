import { AppError } from '../http/errors.js'
import type { Actor } from './actor.js'

/** Whether the actor's role grants `permission` (a role holding `*` has every permission). */
export function can(actor: Pick<Actor, 'permissions'>, permission: string): boolean {
  return actor.permissions.has('*') || actor.permissions.has(permission)
}

/**
 * No one grants what they do not hold (issues 33 and 40): whether the actor holds every one of
 * `permissions` (a list holding `*` needs `*`). The one home of the escalation rule: every path that
 * hands out permissions, or takes over an account holding them, asks `assertHoldsEvery`.
 */
export function holdsEvery(actor: Pick<Actor, 'permissions'>, permissions: Iterable<string>): boolean {
  for (const permission of permissions) if (!can(actor, permission)) return false
  return true
}

/** The one error of the escalation rule: 403 `exceeds_own_permissions`, naming each offending field. */
export function exceedsOwnPermissions(fields: Record<string, string>): AppError {
  return new AppError(
    403,
    'exceeds_own_permissions',
    `Changing ${Object.keys(fields).join(', ')} requires every permission concerned`,
    Object.fromEntries(Object.entries(fields).map(([field, message]) => [field, [message]])),
  )
}

export const BEYOND_ACTOR = 'holds permissions you do not hold'
/** The field message when the account concerned (not a role handed out) holds more than the actor. */
export const HOLDER_BEYOND_ACTOR = 'belongs to a user holding permissions you do not hold'
/** The field message for one permission of a list handed out that the actor does not hold. */
export const PERMISSION_BEYOND_ACTOR = 'is a permission you do not hold'

/** Throws `exceedsOwnPermissions({[field]: …})` unless the actor holds every one of `permissions`. */
export function assertHoldsEvery(
  actor: Pick<Actor, 'permissions'>,
  permissions: Iterable<string>,
  field: string,
  message = BEYOND_ACTOR,
): void {
  if (!holdsEvery(actor, permissions)) throw exceedsOwnPermissions({ [field]: message })
}
