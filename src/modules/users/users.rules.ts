import type { Actor } from '../../platform/auth/actor.js'
import { holdsEvery } from '../../platform/auth/permissions.js'
import type { Db } from '../../platform/db/schema.js'
import type { FieldErrorCollector } from '../../platform/http/errors.js'
import * as queries from './users.queries.js'
import type { UserInput } from './users.schemas.js'

/** What the input rules need from the database, loaded once per request (or per CSV file). */
export interface RuleContext {
  passwordMinLength: number
  roles: Map<number, boolean>
  /** The permissions of each loaded role (who may assign it, whose credentials one may change). */
  rolePermissions: Map<number, readonly string[]>
  languages: Set<string>
}

export async function loadRuleContext(
  db: Db,
  tenantId: number,
  roleIds: Array<number | undefined>,
): Promise<RuleContext> {
  const ids = [...new Set(roleIds.filter((id): id is number => typeof id === 'number'))]
  const [passwordMinLength, states, languages] = await Promise.all([
    queries.findPasswordMinLength(db, tenantId),
    queries.findRoleStates(db, tenantId, ids),
    queries.findLanguageIds(db),
  ])
  const roles = new Map([...states].map(([id, state]) => [id, state.active]))
  const rolePermissions = new Map([...states].map(([id, state]) => [id, state.permissions]))
  return { passwordMinLength, roles, rolePermissions, languages }
}

/**
 * No one grants what they do not hold (issue 33): a role may be assigned, and the credentials
 * (password, email, username) of its holders changed, only by an actor holding every permission
 * of the role (`holdsEvery`, platform/auth/permissions.ts: the one home of the rule). A role not
 * loaded is left to the existence check.
 */
export function roleWithinActor(actor: Pick<Actor, 'permissions'>, rules: RuleContext, roleId: number): boolean {
  const permissions = rules.rolePermissions.get(roleId)
  return permissions === undefined || holdsEvery(actor, permissions)
}

export {
  BEYOND_ACTOR as ROLE_BEYOND_ACTOR,
  exceedsOwnPermissions,
  HOLDER_BEYOND_ACTOR,
} from '../../platform/auth/permissions.js'

/** Credentials whose change hands over the account: only by an actor holding the account's permissions. */
export const CREDENTIAL_KEYS = ['password', 'email', 'username'] as const

const DATE = /^(\d{4})-(\d{2})-(\d{2})/
const GERMAN_DATE = /^(\d{1,2})\.(\d{1,2})\.(\d{4})$/

/** `YYYY-MM-DD` of a date input (ISO/timestamp forms, and `DD.MM.YYYY` from spreadsheets); undefined when not a real date. */
export function normalizeDate(value: string): string | undefined {
  let parts: [number, number, number] | undefined
  const iso = DATE.exec(value)
  const german = GERMAN_DATE.exec(value)
  if (iso) parts = [Number(iso[1]), Number(iso[2]), Number(iso[3])]
  else if (german) parts = [Number(german[3]), Number(german[2]), Number(german[1])]
  if (!parts) return undefined
  const [y, m, d] = parts
  const date = new Date(Date.UTC(y, m - 1, d))
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d || y < 1800)
    return undefined
  return date.toISOString().slice(0, 10)
}

/** Today in UTC as `YYYY-MM-DD` (the database session runs in UTC too). */
export const todayUtc = () => new Date().toISOString().slice(0, 10)

/** Contract 10: inactive when entering_date is in the future or leaving_date in the past. */
export function deriveActive(
  enteringDate: string | null | undefined,
  leavingDate: string | null | undefined,
  today = todayUtc(),
): boolean {
  return !((enteringDate && enteringDate.slice(0, 10) > today) || (leavingDate && leavingDate.slice(0, 10) < today))
}

export const DATE_KEYS = ['birthdate', 'entering_date', 'leaving_date'] as const

/** The user a change applies to (undefined on create). */
export interface CurrentUser {
  role_id: number
  group_account: boolean
  first_name: string
  last_name: string
  entering_date: string | null
  leaving_date: string | null
}

/**
 * The business rules of a create or update that a schema cannot express (contract 10): names of
 * personal accounts, password length, existing (and active) role, existing language, real dates.
 * Adds each problem under `prefix + key`; dates are normalized in place.
 */
export function checkUserInput(
  input: UserInput,
  current: CurrentUser | undefined,
  rules: RuleContext,
  problems: FieldErrorCollector,
  prefix = '',
): void {
  const groupAccount = input.group_account ?? current?.group_account ?? false
  if (!groupAccount) {
    for (const key of ['first_name', 'last_name'] as const) {
      const value = input[key] ?? (current ? current[key] : undefined)
      if (!value?.trim()) problems.add(prefix + key, 'is required for a personal account')
    }
  }
  if (input.password !== undefined && input.password.length < rules.passwordMinLength) {
    problems.add(`${prefix}password`, `must be at least ${rules.passwordMinLength} characters`)
  }
  if (input.role_id !== undefined) {
    const active = rules.roles.get(input.role_id)
    if (active === undefined) problems.add(`${prefix}role_id`, 'does not exist')
    else if (!active && input.role_id !== current?.role_id) problems.add(`${prefix}role_id`, 'is an inactive role')
  } else if (!current) problems.add(`${prefix}role_id`, 'is required')
  if (input.lang_id !== undefined && input.lang_id !== null && !rules.languages.has(input.lang_id)) {
    problems.add(`${prefix}lang_id`, 'does not exist')
  }
  for (const key of DATE_KEYS) {
    const value = input[key]
    if (value === undefined || value === null) continue
    const normalized = normalizeDate(value)
    if (normalized === undefined) problems.add(prefix + key, 'must be a valid date (YYYY-MM-DD)')
    else input[key] = normalized
  }
  const entering = input.entering_date !== undefined ? input.entering_date : current?.entering_date
  const leaving = input.leaving_date !== undefined ? input.leaving_date : current?.leaving_date
  if (
    entering &&
    leaving &&
    normalizeDate(leaving) &&
    normalizeDate(entering) &&
    normalizeDate(leaving)! < normalizeDate(entering)!
  ) {
    problems.add(`${prefix}leaving_date`, 'must not be before entering_date')
  }
}
