import { composedTable } from '../../platform/composition.js'
import { freezeDefinition } from '../../platform/db/database.js'
import type { RawBuilder, SelectQueryBuilder } from 'kysely'
import type { Actor } from '../../platform/auth/actor.js'
import type { Db } from '../../platform/db/schema.js'

/**
 * The things a shared item may point at (contract 30). Each content module lists its target kinds in
 * its `AppModule`'s `shareTargets`; the shared items module never switches on aliases. A target alias no
 * composed module lists answers 422 on create, like an unknown alias.
 */

export type ShareTargetId = number | string
export type ShareTargetIdType = 'integer' | 'uuid'

/** The URLs of one target: the app URL, and the file variants where the target has them. */
export interface ShareTargetUrls {
  /** The front-end URL under `APP_URL` (contract 30, first table). */
  target: string
  /** `{BASE_URL}/api/filemanager/files/{id}/content` etc.; omit a variant the target does not have. */
  showFileContent?: string
  downloadFileContent?: string
  filePoster?: string
}

export interface ShareTargetUrlContext {
  appUrl: string
  baseUrl: string
  /** For targets whose variants depend on stored state (a file's poster). */
  db: Db
  tenantId: number
}

export interface ShareTargetDef {
  alias: string
  /** The shared item types that may point at this alias (contract 30: the type of the same name). */
  sharedItemTypes: readonly string[]
  idType: ShareTargetIdType
  /** Whether the target exists in the tenant. */
  exists(db: Db, tenantId: number, id: ShareTargetId): Promise<boolean>
  /**
   * Whether `actor` can view the target through the normal rules: the module's `.view` permission,
   * the target's own `view` grants and its folder's visibility. Decided by the content module.
   */
  canView(db: Db, actor: Actor, id: ShareTargetId): Promise<boolean>
  /**
   * `exists` and `canView` in one statement (optional): undefined when the target does not exist in
   * the actor's tenant, else whether the actor can view it. Without it, the two are asked in turn.
   */
  visibility?(db: Db, actor: Actor, id: ShareTargetId): Promise<boolean | undefined>
  /** SQL (optional): the target exists and `actor` can view it (`canView`), for a statement that writes only if so. */
  viewableSql?(db: Db, actor: Actor, id: ShareTargetId): RawBuilder<boolean>
  /**
   * What resolving a shared item needs of its target, read at once: its URLs, its display title for
   * `url_context` (null when it has none) and whether `ctx.actor` can view it (`canView`'s rule);
   * undefined when the target does not exist in the tenant.
   */
  describe(
    id: ShareTargetId,
    ctx: ShareTargetUrlContext & { actor: Actor },
  ): Promise<{ urls: ShareTargetUrls; title: string | null; visible: boolean } | undefined>
  /**
   * The one-statement stable URL (optional): left-joins the target (its id given as text by `idText`)
   * and the actor's visibility onto the caller's shared-item query; `describeJoined` reads `describe`'s
   * answer off a row of it (undefined when the target does not exist).
   */
  joinTarget?<DB, TB extends keyof DB, O>(
    query: SelectQueryBuilder<DB, TB, O>,
    actor: Actor,
    idText: RawBuilder<unknown>,
  ): SelectQueryBuilder<DB, TB, O & Record<string, unknown>>
  describeJoined?(
    row: Record<string, unknown>,
    ctx: Pick<ShareTargetUrlContext, 'appUrl' | 'baseUrl'>,
  ): { urls: ShareTargetUrls; title: string | null; visible: boolean } | undefined
  /** Fields of the `targetable` relation, keyed by `String(id)` (default: none loaded). */
  loadFields?(db: Db, tenantId: number, ids: ShareTargetId[]): Promise<Map<string, Record<string, unknown>>>
}

declare module '../../platform/app-module.js' {
  interface AppModule {
    /** The share target kinds this module owns (a later module's alias replaces an earlier one's). */
    shareTargets?: ShareTargetDef[]
  }
}

// frozen: shaped statements take a share target as a fixed argument by its identity
const registry = composedTable(
  (modules) =>
    new Map(modules.flatMap((module) => module.shareTargets ?? []).map((def) => [def.alias, freezeDefinition(def)])),
)

/** The share target of an alias, or undefined. */
export function lookupShareTarget(alias: string): ShareTargetDef | undefined {
  return registry().get(alias)
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Parses a submitted or stored target id for the target's id type; undefined when malformed. */
export function parseShareTargetId(idType: ShareTargetIdType, raw: unknown): ShareTargetId | undefined {
  if (idType === 'uuid') return typeof raw === 'string' && UUID.test(raw) ? raw.toLowerCase() : undefined
  if (typeof raw === 'number') return Number.isSafeInteger(raw) && raw > 0 ? raw : undefined
  if (typeof raw === 'string' && /^[1-9]\d{0,15}$/.test(raw) && Number.isSafeInteger(Number(raw))) return Number(raw)
  return undefined
}

/** The `tgt` claim value naming one target: `"<alias>:<id>"`. */
export const targetClaim = (alias: string, id: ShareTargetId): string =>
  `${alias}:${typeof id === 'string' ? id.toLowerCase() : id}`
