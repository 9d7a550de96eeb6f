import { type Expression, type Kysely, type RawBuilder, sql } from 'kysely'
import type { Actor } from '../../platform/auth/actor.js'
import type { Db } from '../../platform/db/schema.js'
import { recordDomainEvent } from '../../platform/events/domain-events.js'
import { FieldErrorCollector, forbidden, notFound } from '../../platform/http/errors.js'
import type { RawListQuery } from '../../platform/query/parse-query.js'
import { defineResource, type FieldDef, type ResourceDef } from '../../platform/query/resource.js'
import { listResource, showResource } from '../../platform/query/run-query.js'
import type { ViewChain } from '../../platform/access/view-chain.js'
import { isUsableFolder } from '../folders/index.js'
import { actorPrincipal, type Principal, userSetPrincipal } from './content-access.js'
import type {
  ChangeKind,
  ContentChange,
  ContentDeclaration,
  ContentFolder,
  ContentResource,
  ContentRow,
  CreateOptions,
} from './content-declaration.js'

/** What a list's base is built from (`scope`: parent columns pinned to a value). */
interface ListValues {
  actor: Actor
  scope: Record<string, unknown>
}

/** The content tables as Kysely sees them: a declaration names its table at run time, its rows are content rows. */
type ContentTables = Record<string, Record<string, unknown>>
// eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- Kysely types tables by name; these are named at run time
const tables = (db: Db) => db as unknown as Kysely<ContentTables>

/** A row of a content table: every one has `id` and `user_id` columns (migration 0060), Kysely sees only names. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- see above
export const contentRow = (row: Record<string, unknown>) => row as ContentRow
const contentRowOrUndefined = (row: Record<string, unknown> | undefined) => (row ? contentRow(row) : undefined)

/** A stored reference column's value (an int8 read as a number, or null). */
const idOrNull = (value: unknown): number | null => (typeof value === 'number' ? value : null)

/** Binds JSON fields for a jsonb column; everything else as is. */
function columnValues(fields: Record<string, FieldDef>, values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(values)) {
    if (!(key in fields)) continue
    out[key] = fields[key].type === 'json' && value !== null ? JSON.stringify(value) : value
  }
  return out
}

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
  const table = sql.table(decl.table)
  const tableAs = (alias: string) => `${decl.table} as ${alias}`

  /** SQL: the record under `alias` is visible to the principal (the one content rule). */
  function visibleTo(p: Principal, alias: string): RawBuilder<boolean> {
    const parts: RawBuilder<boolean>[] = [p.grant('view', decl.alias, sql.ref(`${alias}.id`))]
    if (decl.tree) parts.push(notRestrictedAbove(p, alias, decl.tree.column))
    if (decl.folder) parts.push(p.folderVisible(sql.ref(`${alias}.${decl.folder.column}`)))
    if (decl.parent) {
      const pa = `${alias}p`
      const column = sql.ref(`${alias}.${decl.parent.column}`)
      parts.push(sql<boolean>`(${column} is null or exists (select 1 from ${sql.table(decl.parent.resource.table)} as ${sql.id(pa)}
        where ${sql.ref(`${pa}.tenant_id`)} = ${p.tenantId} and ${sql.ref(`${pa}.id`)} = ${column}
        and ${decl.parent.resource.visibleTo(p, pa)}))`)
    }
    if (decl.viewRule) parts.push(decl.viewRule(p, alias))
    return sql<boolean>`(${p.can(`${decl.module}.view`)} and (${p.isAdmin} or (${sql.join(parts, sql` and `)})))`
  }

  /**
   * SQL: no record above the one under `alias` (its parent, the parent's parent, …) carries `view`
   * grants that exclude the principal. One statement: the ancestors by a recursive walk (tenant-scoped
   * at every step; `union` ends a cycle), each decided by THE access rule, as the folder path is.
   */
  function notRestrictedAbove(p: Principal, alias: string, column: string): RawBuilder<boolean> {
    const above = `${alias}_above`
    const up = `${alias}_up`
    return sql<boolean>`not exists (
      with recursive ${sql.id(above)}(id) as (
        select ${sql.ref(`${alias}.${column}`)}
        union
        select ${sql.ref(`${up}.${column}`)} from ${table} as ${sql.id(up)}
          join ${sql.id(above)} on ${sql.ref(`${up}.id`)} = ${sql.ref(`${above}.id`)}
          where ${sql.ref(`${up}.tenant_id`)} = ${p.tenantId} and ${sql.ref(`${up}.${column}`)} is not null
      )
      select 1 from ${sql.id(above)} where ${sql.ref(`${above}.id`)} is not null
        and not ${p.grant('view', decl.alias, sql.ref(`${above}.id`))})`
  }

  // a nested record's principal checks its parent's folder with the folder rule too (not `true`)
  const folderOfRecords = decl.folder ?? decl.parent?.resource.folderOfRecords
  const principal = (actor: Actor) => actorPrincipal(actor)
  const ctx = (db: Db, actor: Actor) => ({ db, tenantId: actor.tenantId, actor })

  /** Records of the tenant visible to the actor, as a query builder under alias `c`. */
  function visibleQuery(db: Db, actor: Actor, p: Principal = principal(actor)) {
    return tables(db).selectFrom(tableAs('c')).where('c.tenant_id', '=', actor.tenantId).where(visibleTo(p, 'c'))
  }

  /** The stored row if the actor can view it. */
  async function findVisible(db: Db, actor: Actor, id: number): Promise<ContentRow | undefined> {
    return contentRowOrUndefined(await visibleQuery(db, actor).selectAll('c').where('c.id', '=', id).executeTakeFirst())
  }

  /** Whether the actor can view the record (module permission, grants, folder, parent). */
  async function canView(db: Db, actor: Actor, id: number): Promise<boolean> {
    return (await findVisible(db, actor, id)) !== undefined
  }

  async function exists(db: Db, tenantId: number, id: number): Promise<boolean> {
    const { rows } = await sql`select 1 from ${table} where tenant_id = ${tenantId} and id = ${id}`.execute(db)
    return rows.length > 0
  }

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
  const listBases = new WeakMap<Db, (values: ListValues) => ReturnType<typeof visibleQuery>>()
  function listBase(db: Db) {
    let build = listBases.get(db)
    if (!build)
      listBases.set(
        db,
        (build = ({ actor, scope }) => {
          let base = visibleQuery(db, actor)
          for (const [column, value] of Object.entries(scope)) base = base.where(`c.${column}`, '=', value)
          return base
        }),
      )
    return build
  }

  /** Shows one record; `bypassVisibility` only for a verified grant token naming exactly this record. */
  async function show(db: Db, actor: Actor, id: number, query: RawListQuery = {}, bypassVisibility = false) {
    if (bypassVisibility) {
      const base = tables(db).selectFrom(tableAs('c')).where('c.tenant_id', '=', actor.tenantId).where('c.id', '=', id)
      return showResource(ctx(db, actor), resource, base, query, decl.label)
    }
    if (!actor.permissions.has('*') && !actor.permissions.has(`${decl.module}.view`))
      throw forbidden(`This requires the "${decl.module}.view" permission`)
    return showResource(ctx(db, actor), resource, visibleQuery(db, actor).where('c.id', '=', id), query, decl.label)
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
    if (!parent || !decl.createBy.rule) return
    const p = principal(actor)
    const { rows } =
      await sql`select 1 from ${sql.table(parent.resource.table)} as cp where cp.tenant_id = ${actor.tenantId}
      and cp.id = ${values[parent.column]} and (${p.isAdmin} or ${decl.createBy.rule(p, 'cp')})`.execute(db)
    if (rows.length === 0) throw forbidden(`You may not add a ${decl.label.toLowerCase()} here`)
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
      const row = contentRow(
        await tables(trx)
          .insertInto(decl.table)
          .values({
            ...columnValues(decl.fields, values),
            ...trusted,
            tenant_id: actor.tenantId,
            user_id: actor.userId,
          })
          .returningAll()
          .executeTakeFirstOrThrow(),
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
      const row = contentRowOrUndefined(
        await tables(trx)
          .updateTable(decl.table)
          .set({ ...columnValues(decl.fields, values), updated_at: sql`now()` })
          .where('tenant_id', '=', actor.tenantId)
          .where('id', '=', id)
          .returningAll()
          .executeTakeFirst(),
      )
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
      await deleteGrants(trx, actor.tenantId, sql`${String(id)}`)
      const row = contentRowOrUndefined(
        await tables(trx)
          .deleteFrom(decl.table)
          .where('tenant_id', '=', actor.tenantId)
          .where('id', '=', id)
          .returningAll()
          .executeTakeFirst(),
      )
      if (!row) throw notFound(decl.label)
      await recordChange(trx, actor, 'deleted', row, {})
      return row
    })
  }

  function deleteGrants(trx: Db, tenantId: number, ids: RawBuilder<unknown>) {
    return sql`delete from entity_permissions where tenant_id = ${tenantId} and target_entity = ${decl.alias}
      and target_entity_id in (${ids})`.execute(trx)
  }

  /** Nested records cascade with their parent (foreign key); their grants go here. */
  const children: ContentResource[] = []
  async function deleteGrantsUnder(trx: Db, tenantId: number, parentId: number) {
    const column = sql.ref(decl.parent!.column)
    await deleteGrants(
      trx,
      tenantId,
      sql`select id::text from ${table} where tenant_id = ${tenantId} and ${column} = ${parentId}`,
    )
  }

  /** SQL: the scanned user row `vu` (role `vr`) can view record `id`: `visibleTo` with the user-set principal. */
  function viewedBySql(tenantId: number, id: number): RawBuilder<boolean> {
    const p = userSetPrincipal(tenantId, folderOfRecords?.type)
    return sql<boolean>`exists (
      select 1 from ${table} as v where v.tenant_id = ${tenantId} and v.id = ${id} and ${visibleTo(p, 'v')})`
  }

  const appUrl = (appBase: string, row: ContentRow) => `${appBase.replace(/\/$/, '')}${decl.appPath(row)}`

  async function findStored(db: Db, tenantId: number, id: number): Promise<ContentRow | undefined> {
    return contentRowOrUndefined(
      await tables(db)
        .selectFrom(decl.table)
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('id', '=', id)
        .executeTakeFirst(),
    )
  }

  const visibleToActor = (actor: Actor, alias: string) => visibleTo(principal(actor), alias)

  function viewableSql(db: Db, actor: Actor, id: number): RawBuilder<boolean> {
    return sql<boolean>`exists (${visibleQuery(db, actor)
      .select(sql`1`.as('one'))
      .where('c.id', '=', id)})`
  }

  /** The stored row and whether the actor can view it (`visibleTo`), in one statement; undefined when it does not exist. */
  async function findStoredForViewer(
    db: Db,
    actor: Actor,
    id: number,
  ): Promise<{ row: ContentRow; visible: boolean } | undefined> {
    const found = await tables(db)
      .selectFrom(tableAs('c'))
      .selectAll('c')
      .select(visibleToActor(actor, 'c').as('visible_to_actor'))
      .where('c.tenant_id', '=', actor.tenantId)
      .where('c.id', '=', id)
      .executeTakeFirst()
    if (!found) return undefined
    const { visible_to_actor: visible, ...row } = found
    return { row: contentRow(row), visible: visible === true }
  }

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

export type { Principal }
export type { ChangeKind, ContentChange, ContentDeclaration, ContentFolder, ContentResource, ContentRow, CreateOptions }
export const idRef = (alias: string, column: string): Expression<unknown> => sql.ref(`${alias}.${column}`)
