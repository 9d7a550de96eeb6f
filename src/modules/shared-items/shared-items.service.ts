import { randomUUID } from 'node:crypto'
import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { timestampText } from '../../platform/db/database.js'
import type { Db } from '../../platform/db/schema.js'
import { diff } from '../audit/index.js'
import {
  domainEventWrites,
  recordDomainEvent,
  recordDomainEvents,
  type DomainEvent,
  type EventWrites,
} from '../../platform/events/domain-events.js'
import { FieldErrorCollector, forbidden, notFound } from '../../platform/http/errors.js'
import { recordSyncWrites, wakeSyncListeners } from '../../platform/sync/change-log.js'
import type { RawListQuery } from '../../platform/query/parse-query.js'
import { findResource, listResource, showResource, type ShapedBase } from '../../platform/query/run-query.js'
import { planFreshGrants, syncEntityPermissions, type GrantColumns } from '../entity-permissions/index.js'
import { lookupShareTarget, parseShareTargetId, type ShareTargetDef, type ShareTargetId } from './share-targets.js'
import { completeConfig, sharedItemType, SHARED_ITEM_TYPE_NAMES } from './shared-item-types.js'
import {
  administrableSql,
  canAdministrateSharedItem,
  requireAdministrationArea,
  SHARED_ITEM_GRANT_KEYS,
  viewableSql,
} from './shared-items.access.js'
import * as queries from './shared-items.queries.js'
import { administeredSharedItemResource, sharedItemResource } from './shared-items.resource.js'
import { accessResource } from './shared-items.access-log.js'
import type { CreateSharedItemBody, UpdateSharedItemBody } from './shared-items.schemas.js'

export type SharedItemsService = ReturnType<typeof createSharedItemsService>

interface ShareableTarget {
  def: ShareTargetDef
  id: ShareTargetId
}

/** Builds the one-statement create from its values (one function per target kind). */
type CreateBuild = (values: CreateValues & { tenantId: number }) => ReturnType<typeof queries.insertSharedItem>

/** What the one-statement create writes, as values: stand-ins when its statement is compiled (`createBuild`). */
interface CreateValues extends Record<string, unknown> {
  actor: Actor
  targetId: ShareTargetId
  item: queries.SharedItemInsert
  grants?: GrantColumns
  events: EventWrites
}

/** A body's `config` (an object, by its schema) as the type's config completion takes it. */
const configOf = (config: unknown): Record<string, unknown> | undefined =>
  typeof config === 'object' && config !== null && !Array.isArray(config) ? { ...config } : undefined

const EVENT_FIELDS = ['type', 'redirect_type', 'targetable_type', 'targetable_id', 'config'] as const

const ADMIN_DEFAULT_SELECTS = [
  ...Object.entries(sharedItemResource.fields)
    .filter(([, f]) => !f.internal && (f.byDefault ?? !f.compute))
    .map(([name]) => name),
  'access_count',
  'last_accessed_at',
].join(',')

export function createSharedItemsService({
  db,
  config,
}: Pick<AppDeps, 'db'> & { config: Pick<AppDeps['config'], 'baseUrl' | 'appUrl'> }) {
  const ctx = (actor: Actor, trx: Db = db) => ({
    db: trx,
    tenantId: actor.tenantId,
    actor,
    baseUrl: config.baseUrl,
    appUrl: config.appUrl,
  })

  /**
   * A (new) target of a shared item of `type`, read from the body: its alias must be allowed for the
   * type and registered, its id well-formed (422 otherwise). Nothing is read from the database.
   */
  function parseShareable(
    type: string,
    alias: string,
    rawId: unknown,
    problems: FieldErrorCollector,
  ): ShareableTarget | undefined {
    const typeDef = sharedItemType(type)
    if (!typeDef) return undefined
    const def = lookupShareTarget(alias)
    if (!typeDef.targetableTypes.includes(alias)) {
      problems.add('targetable_type', `must be one of: ${typeDef.targetableTypes.join(', ')} for type "${type}"`)
      return undefined
    }
    if (!def || !def.sharedItemTypes.includes(type)) {
      problems.add('targetable_type', `"${alias}" targets are not available`)
      return undefined
    }
    const id = parseShareTargetId(def.idType, rawId)
    if (id === undefined) {
      problems.add('targetable_id', `must be a valid ${def.idType} id`)
      return undefined
    }
    return { def, id }
  }

  /** The target must exist (422, with the other field errors) and the actor must be able to view it: the "may share" rule (403). */
  async function requireShareable(
    trx: Db,
    actor: Actor,
    { def, id }: ShareableTarget,
    problems: FieldErrorCollector,
  ): Promise<void> {
    // existence and the view rule in one statement when the target offers it; else `exists` now
    // (null: exists, view rule not asked yet) and `canView` after the other field errors
    const visible = def.visibility
      ? await def.visibility(trx, actor, id)
      : (await def.exists(trx, actor.tenantId, id))
        ? null
        : undefined
    if (visible === undefined) problems.add('targetable_id', `no ${def.alias} with id ${id} exists`)
    problems.throwIfAny()
    if (!(visible ?? (await def.canView(trx, actor, id))))
      throw forbidden(`You may only share a ${def.alias} you can view`, 'target_not_shareable')
  }

  /** `parseShareable` and `requireShareable`: the checked target id (undefined when the body named none that parses). */
  async function checkShareable(
    trx: Db,
    actor: Actor,
    type: string,
    alias: string,
    rawId: unknown,
    problems: FieldErrorCollector,
  ): Promise<ShareTargetId | undefined> {
    const target = parseShareable(type, alias, rawId, problems)
    if (target) await requireShareable(trx, actor, target, problems)
    return target?.id
  }

  /** The item when the actor administrates it (404 otherwise: existence does not leak), locked for update. */
  async function requireAdministrable(trx: Db, actor: Actor, id: string): Promise<queries.SharedItemRow> {
    requireAdministrationArea(actor)
    const item = await queries.findSharedItem(trx, actor.tenantId, id, { forUpdate: true })
    if (!item || !(await canAdministrateSharedItem(trx, actor, id))) throw notFound('Shared item')
    return item
  }

  const present = (actor: Actor, id: string, trx: Db = db) =>
    showResource(
      ctx(actor, trx),
      sharedItemResource,
      queries.selectSharedItems(trx, actor.tenantId).where('si.id', '=', id),
      {},
      'Shared item',
    )

  const viewableItems = ({ tenantId, actor }: { tenantId: number; actor: Actor }) =>
    queries.selectSharedItems(db, tenantId).where(viewableSql(actor))

  /** Lists the shared items the actor may view (not soft-deleted; `view` grants in SQL). */
  async function listSharedItems(actor: Actor, query: RawListQuery) {
    return listResource(ctx(actor), sharedItemResource, { build: viewableItems, values: { actor } }, query)
  }

  /** Shows one shared item the actor may view. */
  async function getSharedItem(actor: Actor, id: string, query: RawListQuery = {}) {
    const base = queries.selectSharedItems(db, actor.tenantId).where('si.id', '=', id).where(viewableSql(actor))
    return showResource(ctx(actor), sharedItemResource, base, query, 'Shared item')
  }

  /** Lists the shared items the actor administrates, soft-deleted included. */
  async function listAdministrableSharedItems(actor: Actor, query: RawListQuery) {
    requireAdministrationArea(actor)
    return listResource(
      ctx(actor),
      sharedItemResource,
      queries.selectSharedItems(db, actor.tenantId).where(administrableSql(actor)),
      query,
    )
  }

  /** Shows one shared item the actor administrates (soft-deleted included). */
  async function getAdministrableSharedItem(actor: Actor, id: string, query: RawListQuery = {}) {
    requireAdministrationArea(actor)
    const base = queries.selectSharedItems(db, actor.tenantId).where('si.id', '=', id).where(administrableSql(actor))
    // the admin show adds the access figures to the default selection
    const shown = (query.selects ?? query.select) !== undefined ? query : { ...query, selects: ADMIN_DEFAULT_SELECTS }
    return showResource(ctx(actor), administeredSharedItemResource, base, shown, 'Shared item')
  }

  /** The share access log of one item the actor administers (query conventions), newest first. */
  async function listAccesses(actor: Actor, id: string, query: RawListQuery) {
    requireAdministrationArea(actor)
    const item = await queries
      .selectSharedItems(db, actor.tenantId)
      .select('si.id')
      .where('si.id', '=', id)
      .where(administrableSql(actor))
      .executeTakeFirst()
    if (!item) throw notFound('Shared item')
    const base = queries.selectAccessesOf(db, actor.tenantId, id)
    return listResource(ctx(actor), accessResource, base, query)
  }

  /** The `sharedItem.created` event of a new item, with its audit record's changes. */
  const createdEvent = (
    actor: Actor,
    itemId: string,
    values: queries.SharedItemValues,
    targetId: ShareTargetId,
    body: CreateSharedItemBody,
  ): DomainEvent => ({
    type: 'sharedItem.created',
    tenantId: actor.tenantId,
    actorId: actor.userId,
    subjectType: 'sharedItem',
    subjectId: itemId,
    data: { ...values, targetable_id: targetId, entity_permissions: body.entity_permissions?.length ?? 0 },
    audit: diff(undefined, values),
  })

  // per target kind: the one-statement create, built from its values (one function per kind for the life of the service)
  const createBuilds = new Map<ShareTargetDef, CreateBuild>()
  const createBuild = (def: ShareTargetDef): CreateBuild => {
    let build = createBuilds.get(def)
    if (!build) {
      build = ({ tenantId, actor, targetId, item, grants, events }) => {
        return queries.insertSharedItemWithRiders(
          db,
          tenantId,
          item,
          def.viewableSql!(db, actor, targetId),
          grants,
          events,
        )
      }
      createBuilds.set(def, build)
    }
    return build
  }

  /**
   * The create as one statement, without a transaction of its own: item, grants, events and audit
   * records, written only if the actor may share the target, every grantee exists and no event
   * subscriber has to run in a transaction. Undefined, with nothing written, otherwise: the
   * transactional way then names the problem or runs those subscribers. A round trip costs more
   * here than any of these writes (decision 0005, "Sixth pass"). Compiled once per target kind, actor
   * shape and riders: building it with Kysely was a fifth of the request's Node time ("Eighth pass").
   */
  async function createInOneStatement(
    actor: Actor,
    body: CreateSharedItemBody,
    values: queries.SharedItemValues,
    { def, id: targetId }: ShareableTarget,
  ) {
    if (!def.viewableSql) return undefined
    const itemId = randomUUID()
    const createdAt = timestampText(new Date())
    const grants = body.entity_permissions
      ? await planFreshGrants(
          db,
          actor,
          'sharedItem',
          itemId,
          body.entity_permissions,
          SHARED_ITEM_GRANT_KEYS,
          createdAt,
        )
      : undefined
    if (body.entity_permissions && !grants) return undefined
    const events = domainEventWrites([...(grants?.events ?? []), createdEvent(actor, itemId, values, targetId, body)])
    if (!events) return undefined
    const base: ShapedBase<CreateValues, ReturnType<CreateBuild>> = {
      build: createBuild(def),
      values: {
        actor,
        targetId,
        item: queries.sharedItemInsert(values, itemId),
        ...(grants ? { grants: grants.columns } : {}),
        events,
      },
    }
    const created = await findResource(ctx(actor), sharedItemResource, base, {})
    if (created) await wakeSyncListeners(db, actor.tenantId)
    return created
  }

  /** Creates a shared item of a target the actor may share; the requester becomes its `user_id`. */
  async function createSharedItem(actor: Actor, body: CreateSharedItemBody) {
    requireAdministrationArea(actor)
    const problems = new FieldErrorCollector()
    const typeDef = sharedItemType(body.type)
    if (!typeDef) problems.add('type', `must be one of: ${SHARED_ITEM_TYPE_NAMES.join(', ')}`)
    const itemConfig = typeDef ? completeConfig(typeDef, configOf(body.config), problems) : {}
    const target = parseShareable(body.type, body.targetable_type, body.targetable_id, problems)
    const valuesFor = ({ id }: ShareableTarget): queries.SharedItemValues => ({
      user_id: actor.userId,
      type: body.type,
      redirect_type: body.redirect_type ?? typeDef!.defaultRedirectType,
      targetable_type: body.targetable_type,
      targetable_id: String(id),
      config: itemConfig,
    })
    if (target && problems.isEmpty) {
      const item = await createInOneStatement(actor, body, valuesFor(target), target)
      if (item) return item
    }
    return db.transaction().execute(async (trx) => {
      if (!target || !problems.isEmpty) {
        // every field error at once, the target's existence included
        if (target) await requireShareable(trx, actor, target, problems)
        problems.throwIfAny()
      }
      const { id: targetId } = target!
      const values = valuesFor(target!)
      // the share rule read first, then a plain insert … values and a read of the new row (what a read after
      // the commit shows: no default relations); each is routed whole to the tenant's worker on Citus,
      // where an insert inside a WITH is evaluated from the coordinator
      await requireShareable(trx, actor, target!, problems)
      const newId = randomUUID()
      await queries.insertSharedItemRow(trx, actor.tenantId, queries.sharedItemInsert(values, newId))
      const item = await findResource(
        ctx(actor, trx),
        sharedItemResource,
        queries.selectSharedItems(trx, actor.tenantId).where('si.id', '=', newId),
        {},
      )
      if (!item) throw new Error('a shared item insert returned no row')
      const itemId = String(item.id)
      // the item is new: no reads of it nor of its (no) grants; its grants' events and its own in one insert
      const events: DomainEvent[] = []
      if (body.entity_permissions) {
        await syncEntityPermissions(trx, actor, 'sharedItem', itemId, body.entity_permissions, {
          fresh: { allowedKeys: SHARED_ITEM_GRANT_KEYS },
          events,
        })
      }
      await recordDomainEvents(trx, [...events, createdEvent(actor, itemId, values, targetId, body)])
      // offline clients' change feed: the one-statement create records it there (`sharedItem.created` is not watched)
      await recordSyncWrites(trx, actor.tenantId, { changes: [{ entity: 'sharedItem', id: itemId }] })
      return item
    })
  }

  /**
   * Updates a shared item the actor administrates. `type` and `user_id` never change; a new target
   * passes the share rule; a sent `config` replaces the stored one (defaults filled); a sent
   * `entity_permissions` array replaces the direct grants.
   */
  async function updateSharedItem(actor: Actor, id: string, body: UpdateSharedItemBody) {
    await db.transaction().execute(async (trx) => {
      const item = await requireAdministrable(trx, actor, id)
      const problems = new FieldErrorCollector()
      if (body.type !== undefined && body.type !== item.type) problems.add('type', 'cannot be changed')
      const typeDef = sharedItemType(item.type)
      const changes: Parameters<typeof queries.updateSharedItem>[3] = {}
      if (body.redirect_type !== undefined) changes.redirect_type = body.redirect_type
      if (body.config !== undefined && typeDef)
        changes.config = completeConfig(typeDef, configOf(body.config), problems)
      problems.throwIfAny()
      const alias = body.targetable_type ?? item.targetable_type
      const rawId = body.targetable_id ?? item.targetable_id
      const retargets = alias !== item.targetable_type || String(rawId).toLowerCase() !== item.targetable_id
      if (retargets) {
        const targetId = await checkShareable(trx, actor, item.type, alias, rawId, problems)
        problems.throwIfAny()
        changes.targetable_type = alias
        changes.targetable_id = String(targetId)
      }
      await queries.updateSharedItem(trx, actor.tenantId, id, changes)
      const events: DomainEvent[] = []
      if (body.entity_permissions)
        await syncEntityPermissions(trx, actor, 'sharedItem', id, body.entity_permissions, { events })
      const changedFields: Record<string, unknown> = changes
      const changed = Object.fromEntries(EVENT_FIELDS.filter((f) => f in changes).map((f) => [f, changedFields[f]]))
      await recordDomainEvents(trx, [
        ...events,
        {
          type: 'sharedItem.updated',
          tenantId: actor.tenantId,
          actorId: actor.userId,
          subjectType: 'sharedItem',
          subjectId: id,
          data: { changes: changed, entity_permissions_replaced: body.entity_permissions !== undefined },
          audit: diff(item, changes),
        },
      ])
    })
    return present(actor, id)
  }

  /** Soft-deletes a shared item the actor administrates (idempotent: an already deleted item stays as it is). */
  async function deleteSharedItem(actor: Actor, id: string) {
    await db.transaction().execute(async (trx) => {
      await requireAdministrable(trx, actor, id)
      const deletedAt = await queries.setSharedItemDeleted(trx, actor.tenantId, id, true)
      if (deletedAt === false) return
      await recordDomainEvent(trx, {
        type: 'sharedItem.deleted',
        tenantId: actor.tenantId,
        actorId: actor.userId,
        subjectType: 'sharedItem',
        subjectId: id,
        data: { soft: true },
        audit: { deleted_at: [null, deletedAt] },
      })
    })
  }

  /** Restores a soft-deleted shared item the actor administrates (recorded as `sharedItem.updated`). */
  async function restoreSharedItem(actor: Actor, id: string) {
    await db.transaction().execute(async (trx) => {
      const item = await requireAdministrable(trx, actor, id)
      if ((await queries.setSharedItemDeleted(trx, actor.tenantId, id, false)) === false) return
      await recordDomainEvent(trx, {
        type: 'sharedItem.updated',
        tenantId: actor.tenantId,
        actorId: actor.userId,
        subjectType: 'sharedItem',
        subjectId: id,
        data: { changes: { deleted_at: null }, restored: true },
        audit: diff(item, { deleted_at: null }),
      })
    })
    return present(actor, id)
  }

  return {
    listSharedItems,
    getSharedItem,
    listAdministrableSharedItems,
    getAdministrableSharedItem,
    createSharedItem,
    updateSharedItem,
    deleteSharedItem,
    restoreSharedItem,
    listAccesses,
  }
}
