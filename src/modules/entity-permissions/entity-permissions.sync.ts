import type { Actor } from '../../platform/auth/actor.js'
import { reserveIds } from '../../platform/db/database.js'
import type { Db } from '../../platform/db/schema.js'
import { recordDomainEvents, type DomainEvent } from '../../platform/events/domain-events.js'
import { FieldErrorCollector, notFound } from '../../platform/http/errors.js'
import * as queries from './entity-permissions.queries.js'
import { recordGrantAccessChanges } from './grant-access-changes.js'
import { presentGrant } from './entity-permissions.resource.js'
import {
  PERMISSION_ENTITIES,
  type EntityPermissionElement,
  type PermissionEntity,
} from './entity-permissions.schemas.js'
import { registeredTarget, type TargetId } from './targets.js'
import { groupBy } from '../../platform/group-by.js'
import { syncedGrantTargets } from '../sync/index.js'

const grantKey = (g: { key: string; permission_entity: string; permission_entity_id: number }) =>
  `${g.key}|${g.permission_entity}|${g.permission_entity_id}`

/** The `entityPermission.created|deleted` events of grants, with their audit records' changes. */
function grantEvents(
  actor: Pick<Actor, 'tenantId' | 'userId'>,
  type: 'created' | 'deleted',
  grants: queries.GrantRow[],
): DomainEvent[] {
  return grants.map((grant) => {
    const presented = presentGrant(grant)
    // the audit record: the grant's fields appear (create) or disappear (delete)
    const audit = Object.fromEntries(
      Object.entries(presented)
        .filter(([field]) => field !== 'created_at' && field !== 'updated_at')
        .map(([field, value]) => [field, type === 'created' ? [null, value] : [value, null]]),
    )
    return {
      type: `entityPermission.${type}`,
      tenantId: actor.tenantId,
      actorId: actor.userId,
      subjectType: 'entityPermission',
      subjectId: grant.id,
      data: presented,
      audit,
    }
  })
}

/**
 * Records `entityPermission.created|deleted` for each grant, in the caller's transaction (one
 * statement), and the access changes they make for offline clients' feeds (issue 43).
 */
export async function recordGrantEvents(
  trx: Db,
  actor: Pick<Actor, 'tenantId' | 'userId'>,
  type: 'created' | 'deleted',
  grants: queries.GrantRow[],
) {
  await recordDomainEvents(trx, grantEvents(actor, type, grants))
  const synced = syncedGrantTargets()
  await recordGrantAccessChanges(
    trx,
    actor.tenantId,
    type,
    grants.filter((grant) => synced.has(grant.target_entity)),
  )
}

/** Where a problem of element `index`'s `name` is reported, e.g. `entity_permissions.3.key`. */
export type ElementPath = (index: number, name: keyof EntityPermissionElement) => string

type Principal = { entity: PermissionEntity; id: number; index: number }

/** The problems of grant elements that need no database (keys, principal kinds and ids), and their well-formed principals. */
function checkElementShapes(
  allowedKeys: readonly string[],
  elements: Array<Partial<EntityPermissionElement>>,
  path: ElementPath,
) {
  const problems = new FieldErrorCollector()
  const principals: Principal[] = []
  elements.forEach((element, i) => {
    const key = element.key ?? 'view'
    if (!allowedKeys.includes(key)) problems.add(path(i, 'key'), `must be one of: ${allowedKeys.join(', ')}`)
    if (!PERMISSION_ENTITIES.some((entity) => entity === element.permission_entity)) {
      problems.add(path(i, 'permission_entity'), `must be one of: ${PERMISSION_ENTITIES.join(', ')}`)
    } else if (!Number.isSafeInteger(element.permission_entity_id) || element.permission_entity_id! < 1) {
      problems.add(path(i, 'permission_entity_id'), 'must be a positive integer')
    } else {
      principals.push({ entity: element.permission_entity!, id: element.permission_entity_id!, index: i })
    }
  })
  return { problems, principals }
}

/** Adds the principals that do not exist in the tenant to `problems`, then throws them all (422) if there are any. */
async function throwIfInvalid(
  db: Db,
  tenantId: number,
  principals: Principal[],
  problems: FieldErrorCollector,
  path: ElementPath,
): Promise<void> {
  const existing = await queries.existingPrincipals(db, tenantId, principals)
  for (const { entity, id, index } of principals) {
    if (!existing.has(`${entity}:${id}`))
      problems.add(path(index, 'permission_entity_id'), `no ${entity} with id ${id} exists`)
  }
  problems.throwIfAny()
}

/**
 * Checks grant elements against a target: keys the target accepts, grantees that exist in the
 * tenant. Throws one 422 naming every offending field.
 */
export async function validateGrantElements(
  db: Db,
  tenantId: number,
  allowedKeys: readonly string[],
  elements: Array<Partial<EntityPermissionElement>>,
  path: ElementPath,
): Promise<void> {
  const { problems, principals } = checkElementShapes(allowedKeys, elements, path)
  await throwIfInvalid(db, tenantId, principals, problems, path)
}

/** The grants `elements` ask for on one target (well-formed elements; `key` defaults to `view`), one per identity. */
function wantedGrants(
  targetAlias: string,
  targetId: TargetId,
  elements: Array<Partial<EntityPermissionElement>>,
): Map<string, queries.GrantValues> {
  const wanted = new Map<string, queries.GrantValues>()
  for (const element of elements) {
    const values: queries.GrantValues = {
      key: element.key ?? 'view',
      permission_entity: element.permission_entity!,
      permission_entity_id: element.permission_entity_id!,
      target_entity: targetAlias,
      target_entity_id: String(targetId),
    }
    wanted.set(grantKey(values), values)
  }
  return wanted
}

export interface SyncOptions {
  /** Where element problems are reported, e.g. `entity_permissions.3.key` (default `entity_permissions`). */
  field?: string
  /**
   * The target was created in this transaction and accepts these keys: it exists and has no grants,
   * so neither is read, and the insert itself skips grantees that do not exist (then they are named, 422).
   */
  fresh?: { allowedKeys: readonly string[] }
  /** Receives the grant events instead of recording them, for the caller to record them with its own (one statement). */
  events?: DomainEvent[]
}

/**
 * Makes the direct grants on one target equal to `elements` inside the caller's transaction:
 * unchanged grants keep their ids, missing ones are deleted, new ones created (contract 20).
 * Validates keys and grantees (422 on `<field>.<i>.<key>`). Authorization is the caller's job:
 * call it after deciding the actor may change the target's grants. Returns the resulting grants.
 */
export async function syncEntityPermissions(
  trx: Db,
  actor: Pick<Actor, 'tenantId' | 'userId'>,
  targetAlias: string,
  targetId: TargetId,
  elements: Array<Partial<EntityPermissionElement>>,
  options: SyncOptions = {},
) {
  const target = registeredTarget(targetAlias)
  if (!target) throw new Error(`syncEntityPermissions: target alias "${targetAlias}" is not registered`)
  const field = options.field ?? 'entity_permissions'
  const path: ElementPath = (i, name) => `${field}.${i}.${name}`
  const record = async (type: 'created' | 'deleted', grants: queries.GrantRow[]) => {
    if (options.events) options.events.push(...grantEvents(actor, type, grants))
    else await recordGrantEvents(trx, actor, type, grants)
  }
  const allowedKeys = options.fresh?.allowedKeys ?? (await target.allowedKeys(trx, actor.tenantId, targetId))
  if (!allowedKeys) throw notFound('Target')
  const { problems, principals } = checkElementShapes(allowedKeys, elements, path)
  // a fresh target's grantees are checked by the insert (and only named when it skipped one)
  if (!options.fresh || !problems.isEmpty) await throwIfInvalid(trx, actor.tenantId, principals, problems, path)

  const wanted = wantedGrants(targetAlias, targetId, elements)
  if (options.fresh) {
    let created = await queries.insertGrantsIfAbsent(trx, actor.tenantId, [...wanted.values()], {
      existingGranteesOnly: true,
    })
    if (created.length < wanted.size) {
      // a skipped grantee does not exist: 422 naming it (the caller's transaction rolls back) …
      await throwIfInvalid(trx, actor.tenantId, principals, problems, path)
      // … unless it was created meanwhile: then the rest is inserted as for any target
      const inserted = new Set(created.map(grantKey))
      const rest = await queries.insertGrantsIfAbsent(
        trx,
        actor.tenantId,
        [...wanted].filter(([identity]) => !inserted.has(identity)).map(([, values]) => values),
      )
      created = [...created, ...rest].sort((a, b) => a.id - b.id)
    }
    await record('created', created)
    return created.map(presentGrant)
  }
  const current = await queries.selectGrantsOnTargets(trx, actor.tenantId, targetAlias, [String(targetId)])
  const stale = current.filter((grant) => !wanted.has(grantKey(grant)))
  const deleted = await queries.deleteGrants(
    trx,
    actor.tenantId,
    stale.map((g) => g.id),
  )
  await record('deleted', deleted)

  const kept = new Set(current.map(grantKey))
  const created = await queries.insertGrantsIfAbsent(
    trx,
    actor.tenantId,
    [...wanted].filter(([identity]) => !kept.has(identity)).map(([, values]) => values),
  )
  await record('created', created)
  // the caller holds the target's row lock, so no other sync changed them meanwhile: kept + created
  const result = [...current.filter((grant) => wanted.has(grantKey(grant))), ...created].sort((a, b) => a.id - b.id)
  return result.map(presentGrant)
}

/**
 * The grants of `elements` on a target created in the same single statement (no transaction): their
 * rows, with reserved ids and `createdAt`, their `entityPermission.created` events, and their
 * columns for the statement's parts (`freshGrantsWrite`). Undefined when an element is malformed: the caller takes
 * the transactional way, where `syncEntityPermissions` names every problem.
 */
export async function planFreshGrants(
  db: Db,
  actor: Pick<Actor, 'tenantId' | 'userId'>,
  targetAlias: string,
  targetId: TargetId,
  elements: Array<Partial<EntityPermissionElement>>,
  allowedKeys: readonly string[],
  createdAt: string,
) {
  if (!registeredTarget(targetAlias))
    throw new Error(`planFreshGrants: target alias "${targetAlias}" is not registered`)
  if (!checkElementShapes(allowedKeys, elements, (i, name) => `${i}.${name}`).problems.isEmpty) return undefined
  const wanted = [...wantedGrants(targetAlias, targetId, elements).values()]
  const ids = await reserveIds(db, wanted.length)
  const grants: queries.GrantRow[] = wanted.map((grant, i) => ({
    id: ids[i]!,
    ...grant,
    created_at: createdAt,
    updated_at: createdAt,
  }))
  return { grants, events: grantEvents(actor, 'created', grants), columns: queries.freshGrantColumns(grants) }
}

/** Deletes every grant on the given targets (e.g. a deleted folder tree), recording the events. */
export async function deleteEntityPermissionsOnTargets(
  trx: Db,
  actor: Pick<Actor, 'tenantId' | 'userId'>,
  targetAlias: string,
  targetIds: TargetId[],
) {
  const deleted = await queries.deleteGrantsOnTargets(trx, actor.tenantId, targetAlias, targetIds.map(String))
  await recordGrantEvents(trx, actor, 'deleted', deleted)
  return deleted.length
}

/** Grants on many targets of one alias, grouped by target id as the API shows it (for `entityPermissions` relations). */
export async function loadEntityPermissionsOfTargets(
  db: Db,
  tenantId: number,
  targetAlias: string,
  targetIds: TargetId[],
) {
  const rows = await queries.selectGrantsOnTargets(db, tenantId, targetAlias, targetIds.map(String))
  return groupBy(rows.map(presentGrant), (grant): TargetId => grant.target_entity_id)
}
