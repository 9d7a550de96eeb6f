import type { Readable } from 'node:stream'
import type { Expression, RawBuilder } from 'kysely'
import type { TSchema } from 'typebox'
import type { ViewChain } from '../../platform/access/view-chain.js'
import type { Actor } from '../../platform/auth/actor.js'
import type { Db, FolderType } from '../../platform/db/schema.js'
import type { FieldErrorCollector } from '../../platform/http/errors.js'
import type { RawListQuery } from '../../platform/query/parse-query.js'
import type { FieldDef, ResourceDef } from '../../platform/query/resource.js'

// What a content module declares (`ContentDeclaration`) and what `defineContent` makes of it (`ContentResource`).

/**
 * Who a visibility predicate is about. The content rule (module permission, the record's grants,
 * its folder, its parent record) is written ONCE against this interface and evaluated for
 *  - one actor: the shared access rule (`grantAllows`) and the folders module's `folderIdVisibleSql`;
 *  - every user of a tenant at once (the `vu`/`vr` aliases of a users ⋈ roles scan): the same rules
 *    with the grantee taken from the row (the folders module's `folderIdVisibleToEachSql`) — used for
 *    "notify everyone who can view X" (set-based).
 */
export interface Principal {
  tenantId: number
  /** Admin (`*`) bypass as SQL: constant for an actor, per row for the user set. */
  isAdmin: RawBuilder<boolean>
  can(permission: string): RawBuilder<boolean>
  grant(key: string, targetAlias: string, targetId: Expression<unknown>): RawBuilder<boolean>
  /** The folder with id `folderId` is visible (null → no folder restriction). */
  folderVisible(folderId: Expression<unknown>): RawBuilder<boolean>
}

/** A content record's folder column (contract 30): a folder of one type whose visibility it inherits. */
export interface ContentFolder {
  column: string
  type: FolderType
}

export type ContentRow = Record<string, unknown> & { id: number; user_id: number | null }

/** A row of a content table: every one has `id` and `user_id` columns (migration 0060), Kysely sees only names. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- Kysely types content tables by name only
export const contentRow = (row: Record<string, unknown>) => row as ContentRow

export type ChangeKind = 'created' | 'updated' | 'deleted'
export interface ContentChange {
  kind: ChangeKind
  actor: Actor
  row: ContentRow
  eventId: string
  /** The written values as sent (after `prepare`), including non-column switches such as `notify`. */
  values: Record<string, unknown>
}

export interface ContentDeclaration {
  alias: string
  table: string
  /** `<module>.view` / `<module>.manage` govern the records. */
  module: string
  label: string
  /** Output fields besides `id, user_id, created_at, updated_at`; their columns are the writable ones. */
  fields: Record<string, FieldDef>
  folder?: ContentFolder
  /** The record lives inside another content record and is visible only where that one is. */
  parent?: { column: string; resource: ContentResource }
  /**
   * The records form a tree by this column (a directory's `parent_id`): a `view` restriction on a
   * record applies to every record below it, and to what lives in them, like folder trees (issue 33).
   */
  tree?: { column: string }
  /** Body fields naming other content the requester must be able to view (else 422 on the field). */
  references?: Record<string, ContentResource | 'self'>
  /** Extra view condition (e.g. form messages: the form's `viewFormMessages` rule). */
  viewRule?: (p: Principal, alias: string) => RawBuilder<boolean>
  /** Who may create: `manage` (default) or viewers of the parent passing `createRule`. */
  createBy?: { viewersOfParent: true; rule?: (p: Principal, parentAlias: string) => RawBuilder<boolean> }
  /** The front-end path of a record (under APP_URL), from its stored columns. */
  appPath: (row: ContentRow) => string
  /** Field checks and normalization of written values (merged with the stored row on update). */
  prepare?: (
    values: Record<string, unknown>,
    merged: Record<string, unknown>,
    errors: FieldErrorCollector,
  ) => Record<string, unknown>
  /** Runs in the change's transaction after the domain event (e.g. queue notifications). */
  afterChange?: (trx: Db, change: ContentChange) => Promise<void>
  /** Runs in the delete's transaction before the row goes (e.g. refuse a non-empty directory). */
  beforeDelete?: (trx: Db, actor: Actor, row: ContentRow) => Promise<void>
  /** Title for shared-item `url_context`. */
  titleColumn?: string
  /** Relations of the output (e.g. the reader's own `my_state`), their response schemas, and which are loaded by default. */
  relations?: ResourceDef['relations']
  defaultRelations?: string[]
  outputs?: Record<string, TSchema>
  /** Filter keys that are not plain fields (e.g. `filter[confirmation]`). */
  customFilters?: ResourceDef['customFilters']
  /** Default list order (default `['id']`), e.g. pinned first. */
  defaultSort?: string[]
}

/** What a caller adds to one create. */
export interface CreateOptions {
  /**
   * Runs in the create's transaction before the insert (e.g. a quota's check, which must see and lock
   * what the tenant keeps in the same transaction); what it throws rolls the create back.
   */
  beforeInsert?: (trx: Db) => Promise<void>
}

/** What a content declaration yields: the rule, the service functions, and what other modules need. */
export interface ContentResource {
  alias: string
  table: string
  module: string
  label: string
  titleColumn?: string
  resource: ResourceDef
  columns: string[]
  /** Response schemas of the declaration's relations (`outputs`). */
  outputs: Record<string, TSchema>
  /** The folder the records live in: their own, else their parent's (a comment's post's channel). */
  folderOfRecords?: ContentFolder
  visibleTo(p: Principal, alias: string): RawBuilder<boolean>
  canView(db: Db, actor: Actor, id: number): Promise<boolean>
  exists(db: Db, tenantId: number, id: number): Promise<boolean>
  findVisible(db: Db, actor: Actor, id: number): Promise<ContentRow | undefined>
  findStored(db: Db, tenantId: number, id: number): Promise<ContentRow | undefined>
  findStoredForViewer(db: Db, actor: Actor, id: number): Promise<{ row: ContentRow; visible: boolean } | undefined>
  /** SQL: the record under `alias` is visible to `actor` (`visibleTo` with the actor's principal). */
  visibleToActor(actor: Actor, alias: string): RawBuilder<boolean>
  /** SQL: the record `id` exists and `actor` can view it (`canView`'s query), for a statement that writes only if so. */
  viewableSql(db: Db, actor: Actor, id: number): RawBuilder<boolean>
  list(
    db: Db,
    actor: Actor,
    query: RawListQuery,
    scope?: Record<string, unknown>,
  ): Promise<Readable | Record<string, unknown>[]>
  show(
    db: Db,
    actor: Actor,
    id: number,
    query?: RawListQuery,
    bypassVisibility?: boolean,
  ): Promise<Record<string, unknown>>
  create(
    db: Db,
    actor: Actor,
    body: Record<string, unknown>,
    trusted?: Record<string, unknown>,
    options?: CreateOptions,
  ): Promise<ContentRow>
  update(db: Db, actor: Actor, id: number, body: Record<string, unknown>): Promise<ContentRow>
  remove(db: Db, actor: Actor, id: number): Promise<ContentRow>
  /**
   * SQL: the user row `vu` (joined with its role as `vr`) can view record `id` — the content rule with the
   * grantee taken from the row (`userSetPrincipal`); the reading audience evaluates it once per profile.
   */
  viewedBySql(tenantId: number, id: number): RawBuilder<boolean>
  appUrl(appBase: string, row: ContentRow): string
  deleteGrantsUnder(trx: Db, tenantId: number, parentId: number): Promise<void>
  addChild(child: ContentResource): void
  /** The parts `visibleTo` checks for one stored record (explain access); undefined when it does not exist. */
  viewChain(db: Db, tenantId: number, id: number): Promise<ViewChain | undefined>
}
