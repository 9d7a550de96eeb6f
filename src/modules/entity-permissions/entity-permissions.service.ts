import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { can } from '../../platform/auth/permissions.js'
import { visibleIdOrNothing, visibleOrNothing } from '../../platform/access/existence-rule.js'
import type { Db } from '../../platform/db/schema.js'
import { forbidden, invalidField, notFound } from '../../platform/http/errors.js'
import type { RawListQuery } from '../../platform/query/parse-query.js'
import { findResource, listResource, showResource } from '../../platform/query/run-query.js'
import * as queries from './entity-permissions.queries.js'
import { entityPermissionResource } from './entity-permissions.resource.js'
import type { CreateEntityPermissionBody } from './entity-permissions.schemas.js'
import { recordGrantEvents, validateGrantElements } from './entity-permissions.sync.js'
import { lookupTarget, parseTargetId, registeredTarget, type GrantTarget, type TargetId } from './targets.js'

export type EntityPermissionsService = ReturnType<typeof createEntityPermissionsService>

const MANAGE = 'entityPermissions.manage'

/** Who may manage the grants of a target: `entityPermissions.manage`, or administrate access on it. */
export async function mayManageGrants(db: Db, actor: Actor, target: GrantTarget, id: TargetId): Promise<boolean> {
  return can(actor, MANAGE) || target.canAdministrate(db, actor, id)
}

/** Grant managers know every target; anyone else only those they may see or administrate (the existence rule). */
async function mayKnowTarget(db: Db, actor: Actor, target: GrantTarget, id: TargetId): Promise<boolean> {
  if (can(actor, MANAGE)) return true
  const [visible, administrable] = await Promise.all([
    target.isVisible(db, actor, id),
    target.canAdministrate(db, actor, id),
  ])
  return visible || administrable
}

/** Stands in for a grant that does not exist, so that its visibility check costs what a real one does. */
const PLACEHOLDER_GRANT = { target_entity: 'folder', target_entity_id: '1' }

export function createEntityPermissionsService({ db }: AppDeps) {
  const ctx = (actor: Actor) => ({ db, tenantId: actor.tenantId, actor })

  /** The grant target's keys when it exists and the actor may know it; undefined answers as "no such target". */
  const knownTargetKeys = (actor: Actor, target: GrantTarget, id: TargetId) =>
    visibleIdOrNothing(
      () => target.allowedKeys(db, actor.tenantId, id),
      () => mayKnowTarget(db, actor, target, id),
    )

  /** A stored grant when the actor may know its target; undefined answers as "no such grant". */
  async function findKnownGrant(actor: Actor, id: number) {
    return visibleOrNothing(
      () => queries.findGrant(db, actor.tenantId, id),
      async (grant) => {
        const target = registeredTarget(grant.target_entity)
        const targetId = target && parseTargetId(target, grant.target_entity_id)
        return target !== undefined && targetId !== undefined && mayKnowTarget(db, actor, target, targetId)
      },
      PLACEHOLDER_GRANT,
    )
  }

  /** Parses alias + id of a body (a 422 naming the offending field), without reading the target. */
  function parseBodyTarget(alias: string, rawId: unknown) {
    const found = lookupTarget(alias)
    if ('problem' in found) throw invalidField('target_entity', found.problem)
    const id = parseTargetId(found.target, rawId)
    if (id === undefined) throw invalidField('target_entity_id', `must be a valid ${found.target.idType} id`)
    return { target: found.target, id }
  }

  /** The keys of a parsed body target when it exists and the actor may know it, or a 422 naming `target_entity_id`. */
  async function bodyTargetKeys(actor: Actor, target: GrantTarget, id: TargetId) {
    const keys = await knownTargetKeys(actor, target, id)
    if (!keys) throw invalidField('target_entity_id', `no ${target.alias} with id ${id} exists`)
    return keys
  }

  async function requireGrantManagement(actor: Actor, alias: string, storedId: string): Promise<void> {
    if (can(actor, MANAGE)) return
    const target = registeredTarget(alias)
    const id = target && parseTargetId(target, storedId)
    if (!target || id === undefined || !(await target.canAdministrate(db, actor, id))) {
      throw forbidden('Managing these grants requires administrate access on the target or "entityPermissions.manage"')
    }
  }

  /** Lists every grant on one target. */
  async function listTargetGrants(actor: Actor, alias: string, rawId: string, query: RawListQuery) {
    const found = lookupTarget(alias)
    if ('problem' in found) throw invalidField('target_entity', found.problem)
    const id = parseTargetId(found.target, rawId)
    if (id === undefined || !(await knownTargetKeys(actor, found.target, id))) throw notFound('Target')
    if (!(await mayManageGrants(db, actor, found.target, id)))
      throw forbidden('Listing these grants requires administrate access on the target or "entityPermissions.manage"')
    const base = queries
      .selectGrants(db, actor.tenantId)
      .where('ep.target_entity', '=', alias)
      .where('ep.target_entity_id', '=', String(id))
    return listResource(ctx(actor), entityPermissionResource, base, {
      selects: query.selects,
      select: query.select,
      relations: query.relations,
      include: query.include,
    })
  }

  /** Shows one grant to whoever may manage the grants of its target. */
  async function getGrant(actor: Actor, id: number, query: RawListQuery = {}) {
    const grant = await findKnownGrant(actor, id)
    if (!grant) throw notFound('Entity permission')
    await requireGrantManagement(actor, grant.target_entity, grant.target_entity_id)
    return showResource(
      ctx(actor),
      entityPermissionResource,
      queries.selectGrants(db, actor.tenantId).where('ep.id', '=', id),
      query,
      'Entity permission',
    )
  }

  /** Creates a grant, or returns the identical existing one (`created: false`); safe under concurrency. */
  async function createGrant(actor: Actor, body: CreateEntityPermissionBody) {
    const { target, id } = parseBodyTarget(body.target_entity, body.target_entity_id)
    const key = body.key ?? 'view'
    const element = { key, permission_entity: body.permission_entity, permission_entity_id: body.permission_entity_id }
    const values: queries.GrantValues = { ...element, target_entity: target.alias, target_entity_id: String(id) }
    // contract 20: an existing identical combination is returned (200). A grant manager may know every
    // target and such a grant proves its target exists (deleting a target deletes its grants), so the
    // common repeat costs that one read; anyone else learns of the grant only after the target checks.
    const findExisting = () =>
      findResource(ctx(actor), entityPermissionResource, queries.selectIdenticalGrant(db, actor.tenantId, values), {})
    const manager = can(actor, MANAGE)
    const existingForManager = manager ? await findExisting() : undefined
    if (existingForManager) return { record: existingForManager, created: false }
    const keys = await bodyTargetKeys(actor, target, id)
    if (!(await mayManageGrants(db, actor, target, id)))
      throw forbidden('Granting on this target requires administrate access on it or "entityPermissions.manage"')
    const existing = manager ? undefined : await findExisting()
    if (existing) return { record: existing, created: false }
    await validateGrantElements(db, actor.tenantId, keys, [element], (_index, name) => name)
    const { grantId, created } = await db.transaction().execute(async (trx) => {
      // ON CONFLICT on the unique constraint: 50 identical concurrent creates leave exactly one row
      const inserted = await queries.insertGrantIfAbsent(trx, actor.tenantId, values)
      if (inserted) {
        await recordGrantEvents(trx, actor, 'created', [inserted])
        return { grantId: inserted.id, created: true }
      }
      const existing = await queries.findIdenticalGrant(trx, actor.tenantId, values)
      if (!existing) throw new Error('grant vanished between conflict and read')
      return { grantId: existing.id, created: false }
    })
    const record = await showResource(
      ctx(actor),
      entityPermissionResource,
      queries.selectGrants(db, actor.tenantId).where('ep.id', '=', grantId),
      {},
      'Entity permission',
    )
    return { record, created }
  }

  /** Deletes one grant. */
  async function deleteGrant(actor: Actor, id: number) {
    const grant = await findKnownGrant(actor, id)
    if (!grant) throw notFound('Entity permission')
    await requireGrantManagement(actor, grant.target_entity, grant.target_entity_id)
    await db.transaction().execute(async (trx) => {
      const deleted = await queries.deleteGrants(trx, actor.tenantId, [id])
      await recordGrantEvents(trx, actor, 'deleted', deleted)
    })
  }

  return { listTargetGrants, getGrant, createGrant, deleteGrant }
}
