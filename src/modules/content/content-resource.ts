import type { RawBuilder } from 'kysely'
import type { Actor } from '../../platform/auth/actor.js'
import type { Db } from '../../platform/db/schema.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { FieldErrorCollector, forbidden, notFound } from '../../platform/http/errors.js'
import type { RawListQuery } from '../../platform/query/parse-query.js'
import { defineResource, type ResourceDef } from '../../platform/query/resource.js'
import { listResource, showResource } from '../../platform/query/run-query.js'
import type { ViewChain } from '../../platform/access/view-chain.js'
import { isUsableFolder } from '../folders/index.js'
import { actorPrincipal, contentVisibleSql, userSetPrincipal } from './content-access.queries.js'
import type {
  ChangeKind,
  ContentDeclaration,
  ContentResource,
  ContentRow,
  CreateOptions,
} from './content-declaration.js'
import * as queries from './content-resource.queries.js'

/** What a list's base is built from (`scope`: parent columns pinned to a value). */
interface ListValues {
  actor: Actor
  scope: Record<string, unknown>
}

/** A stored reference column's value (an int8 read as a number, or null). */
const idOrNull = (value: unknown): number | null => (typeof value === 'number' ? value : null)

/**
 * The generic content resource (contract 30): one declaration gives the visibility rule (module
 * permission → the record's grants → its folder → its parent, in SQL), list/show with the query
 * conventions, create/update/delete with domain events in the same transaction, the set-based
 * "who can view it" query for notifications, and what shared items need (exists/canView/urls).
 */
export function defineContent(decl: ContentDeclaration): ContentResource {
  const resource: ResourceDef = defineResource({
    name: decl.alias,
    alias: 'c',
    uniqueKey: 'id',
    defaultSort: decl.defaultSort ?? ['id'],
    relations: decl.relations,
    defaultRelations: decl.defaultRelations,
    customFilters: decl.customFilters,
    fields: {
      id: { type: 'id' },
      user_id: { type: 'id' },
      ...decl.fields,
      created_at: { type: 'timestamp' },
      updated_at: { type: 'timestamp' },
    },
  })
  const columns = Object.keys(decl.fields)

  /** SQL: the record under `alias` is visible to the principal (the one content rule). */
  const visibleTo: ContentResource['visibleTo'] = (p, alias) => contentVisibleSql(decl, p, alias)

  // a nested record's principal checks its parent's folder with the folder rule too (not `true`)
  const folderOfRecords = decl.folder ?? decl.parent?.resource.folderOfRecords
  const principal = (actor: Actor) => actorPrincipal(actor)
  const ctx = (db: Db, actor: Actor) => ({ db, tenantId: actor.tenantId, actor })

  /** The content rule for the actor, for the record under the alias a statement gives. */
  const visibleToActor = (actor: Actor, alias: string) => visibleTo(principal(actor), alias)
  const actorCondition = (actor: Actor) => (alias: string) => visibleToActor(actor, alias)

  /** The stored row if the actor can view it. */
  async function findVisible(db: Db, actor: Actor, id: number): Promise<ContentRow | undefined> {
    return queries.findVisibleContent(db, decl.table, actor.tenantId, id, actorCondition(actor))
  }

  /** Whether the actor can view the record (module permission, grants, folder, parent). */
  async function canView(db: Db, actor: Actor, id: number): Promise<boolean> {
    return (await findVisible(db, actor, id)) !== undefined
  }

  const exists = (db: Db, tenantId: number, id: number) => queries.contentExists(db, decl.table, tenantId, id)

  /** Lists visible records (filters, sort and limit in the same statement); `scope` pins a parent column. */
  async function list(db: Db, actor: Actor, query: RawListQuery, scope?: Record<string, unknown>) {
    if (!actor.permissions.has('*') && !actor.permissions.has(`${decl.module}.view`))
      throw forbidden(`This requires the "${decl.module}.view" permission`)
    const parent = decl.parent
    if (parent && scope && !(await parent.resource.canView(db, actor, Number(scope[parent.column]))))
      throw notFound(parent.resource.label)
    return listResource(ctx(db, actor), resource, { build: listBase(db), values: { actor, scope: scope ?? {} } }, query)
  }

  // the list's base, built once per shape (shapedStatement): one builder per database handle, for its life
  const listBases = new WeakMap<Db, (values: ListValues) => queries.VisibleContentQuery>()
  function listBase(db: Db) {
    let build = listBases.get(db)
    if (!build)
      listBases.set(
        db,
        (build = ({ actor, scope }) =>
          queries.selectVisibleContentInScope(db, decl.table, actor.tenantId, actorCondition(actor), scope)),
      )
    return build
  }

  /** Shows one record; `bypassVisibility` only for a verified grant token naming exactly this record. */
  async function show(db: Db, actor: Actor, id: number, query: RawListQuery = {}, bypassVisibility = false) {
    if (bypassVisibility) {
      const base = queries.selectContentById(db, decl.table, actor.tenantId, id)
      return showResource(ctx(db, actor), resource, base, query, decl.label)
    }
    if (!actor.permissions.has('*') && !actor.permissions.has(`${decl.module}.view`))
      throw forbidden(`This requires the "${decl.module}.view" permission`)
    const base = queries.selectVisibleContentById(db, decl.table, actor.tenantId, id, actorCondition(actor))
    return showResource(ctx(db, actor), resource, base, query, decl.label)
  }

  /** 422 on each referenced record or folder the actor cannot see (or of the wrong folder type). */
  async function checkReferences(db: Db, actor: Actor, values: Record<string, unknown>, errors: FieldErrorCollector) {
    for (const [field, target] of Object.entries(decl.references ?? {})) {
      const id = values[field]
      const content = target === 'self' ? self : target
      if (typeof id === 'number' && !(await content.canView(db, actor, id)))
        errors.add(field, `no such ${content.label.toLowerCase()}`)
    }
    const folder = decl.folder
    const folderId = folder ? values[folder.column] : undefined
    if (folder && typeof folderId === 'number' && !(await isUsableFolder(db, actor, folder.type, folderId)))
      errors.add(folder.column, `no such ${folder.type} folder`)
  }

  async function recordChange(trx: Db, actor: Actor, kind: ChangeKind, row: ContentRow, data: Record<string, unknown>) {
    const eventId = await recordDomainEvent(trx, {
      type: `${decl.alias}.${kind}`,
      tenantId: actor.tenantId,
      actorId: actor.userId,
      subjectType: decl.alias,
      subjectId: row.id,
      data,
    })
    await decl.afterChange?.(trx, { kind, actor, row, eventId, values: data })
  }

  /** Parent of a nested create: 404 unless visible; 403 unless the create rule passes. */
  async function checkCreateRights(db: Db, actor: Actor, values: Record<string, unknown>, nestedUnderParent: boolean) {
    const parent = decl.parent
    if (parent && nestedUnderParent && !(await parent.resource.canView(db, actor, Number(values[parent.column]))))
      throw notFound(parent.resource.label)
    if (!decl.createBy) {
      if (!actor.permissions.has('*') && !actor.permissions.has(`${decl.module}.manage`))
        throw forbidden(`This requires the "${decl.module}.manage" permission`)
      return
    }
    const rule = decl.createBy.rule
    if (!parent || !rule) return
    const p = principal(actor)
    const parentId = values[parent.column]
    const allowed = await queries.parentAllowsCreate(db, parent.resource.table, actor.tenantId, parentId, p, rule)
    if (!allowed) throw forbidden(`You may not add a ${decl.label.toLowerCase()} here`)
  }

  /** Creates a record (author = actor); `trusted` columns come from the server (e.g. file sizes). */
  async function create(
    db: Db,
    actor: Actor,
    body: Record<string, unknown>,
    trusted: Record<string, unknown> = {},
    options: CreateOptions = {},
  ): Promise<ContentRow> {
    await checkCreateRights(
      db,
      actor,
      { ...body, ...trusted },
      decl.parent !== undefined && decl.parent.column in trusted,
    )
    const errors = new FieldErrorCollector()
    await checkReferences(db, actor, body, errors)
    const values = decl.prepare ? decl.prepare(body, body, errors) : body
    errors.throwIfAny()
    return db.transaction().execute(async (trx) => {
      await options.beforeInsert?.(trx)
      const row = await queries.insertContent(
        trx,
        decl.table,
        actor.tenantId,
        actor.userId,
        decl.fields,
        values,
        trusted,
      )
      await recordChange(trx, actor, 'created', row, { ...values })
      return row
    })
  }

  /** The visible row, or 404; then `<module>.manage`, or 403. */
  async function findManageable(db: Db, actor: Actor, id: number): Promise<ContentRow> {
    const row = await findVisible(db, actor, id)
    if (!row) throw notFound(decl.label)
    if (!actor.permissions.has('*') && !actor.permissions.has(`${decl.module}.manage`))
      throw forbidden(`This requires the "${decl.module}.manage" permission`)
    return row
  }

  /** Updates the sent fields of a record the actor can view and manage. */
  async function update(db: Db, actor: Actor, id: number, body: Record<string, unknown>): Promise<ContentRow> {
    const stored = await findManageable(db, actor, id)
    const errors = new FieldErrorCollector()
    await checkReferences(db, actor, body, errors)
    const values = decl.prepare ? decl.prepare(body, { ...stored, ...body }, errors) : body
    errors.throwIfAny()
    return db.transaction().execute(async (trx) => {
      const row = await queries.updateContent(trx, decl.table, actor.tenantId, id, decl.fields, values)
      if (!row) throw notFound(decl.label)
      await recordChange(trx, actor, 'updated', row, { ...values })
      return row
    })
  }

  /** Deletes a record the actor can view and manage, with the grants on it and on nested records. */
  async function remove(db: Db, actor: Actor, id: number): Promise<ContentRow> {
    const stored = await findManageable(db, actor, id)
    return db.transaction().execute(async (trx) => {
      await decl.beforeDelete?.(trx, actor, stored)
      for (const child of children) await child.deleteGrantsUnder(trx, actor.tenantId, id)
      await queries.deleteGrantsOfRecord(trx, decl.alias, actor.tenantId, id)
      const row = await queries.deleteContent(trx, decl.table, actor.tenantId, id)
      if (!row) throw notFound(decl.label)
      await recordChange(trx, actor, 'deleted', row, {})
      return row
    })
  }

  /** Nested records cascade with their parent (foreign key); their grants go here. */
  const children: ContentResource[] = []
  async function deleteGrantsUnder(trx: Db, tenantId: number, parentId: number) {
    await queries.deleteGrantsOfNested(trx, decl.alias, decl.table, decl.parent!.column, tenantId, parentId)
  }

  /** SQL: the scanned user row `vu` (role `vr`) can view record `id`: `visibleTo` with the user-set principal. */
  function viewedBySql(tenantId: number, id: number): RawBuilder<boolean> {
    const p = userSetPrincipal(tenantId, folderOfRecords?.type)
    return queries.recordViewedBySql(decl.table, tenantId, id, (alias) => visibleTo(p, alias))
  }

  const appUrl = (appBase: string, row: ContentRow) => `${appBase.replace(/\/$/, '')}${decl.appPath(row)}`

  const findStored = (db: Db, tenantId: number, id: number) => queries.findContent(db, decl.table, tenantId, id)

  const viewableSql = (db: Db, actor: Actor, id: number) =>
    queries.visibleContentExistsSql(db, decl.table, actor.tenantId, id, actorCondition(actor))

  /** The stored row and whether the actor can view it (`visibleTo`), in one statement; undefined when it does not exist. */
  const findStoredForViewer = (db: Db, actor: Actor, id: number) =>
    queries.findContentForViewer(db, decl.table, actor.tenantId, id, actorCondition(actor))

  /** The same parts as `visibleTo`, in its order: module permission and grants of the record, its folder, its parent. */
  async function viewChain(db: Db, tenantId: number, id: number): Promise<ViewChain | undefined> {
    const row = await findStored(db, tenantId, id)
    if (!row) return undefined
    const own = { target_entity: decl.alias, target_entity_id: String(id), permission: `${decl.module}.view` }
    const treeParentId = decl.tree ? idOrNull(row[decl.tree.column]) : null
    if (decl.tree && treeParentId !== null) {
      // the records above in the tree restrict this one as its own grants do
      const above = await viewChain(db, tenantId, Number(treeParentId))
      if (above) return { records: [own, ...above.records], folderId: above.folderId }
    }
    const folderId = decl.folder ? idOrNull(row[decl.folder.column]) : null
    const parentId = decl.parent ? idOrNull(row[decl.parent.column]) : null
    const parent =
      decl.parent && parentId !== null
        ? await decl.parent.resource.viewChain(db, tenantId, Number(parentId))
        : undefined
    return {
      records: [own, ...(parent?.records ?? [])],
      folderId: folderId !== null ? Number(folderId) : (parent?.folderId ?? null),
    }
  }

  const self: ContentResource = {
    alias: decl.alias,
    table: decl.table,
    module: decl.module,
    label: decl.label,
    titleColumn: decl.titleColumn,
    resource,
    columns,
    outputs: decl.outputs ?? {},
    folderOfRecords,
    visibleTo,
    canView,
    exists,
    findVisible,
    findStored,
    findStoredForViewer,
    visibleToActor,
    viewableSql,
    list,
    show,
    create,
    update,
    remove,
    viewedBySql,
    appUrl,
    deleteGrantsUnder,
    addChild: (child) => {
      children.push(child)
    },
    viewChain,
  }
  decl.parent?.resource.addChild(self)
  return self
}
