import type { RawBuilder } from 'kysely'
import type { Actor } from '../../platform/auth/actor.js'
import type { Db } from '../../platform/db/schema.js'
import { contentRow, type ContentResource, type ContentRow } from './content-declaration.js'
import { type AnySelect, leftJoinContentTarget } from './content-resource.queries.js'

/** Extra URL variants of a target (file content/download/poster), from its stored row. */
export type VariantUrls = (row: ContentRow, baseUrl: string) => Record<string, string>

/**
 * The share-target shape the shared-items module registers (contract 30), derived from a content
 * resource: same-named shared item type, existence, the normal view rule, the app URL. Structural,
 * so that the platform needs no import of the shared-items module.
 */
export function contentShareTarget(content: ContentResource, variants?: VariantUrls) {
  // a number is kept as it is: it may be a `shapedStatement`'s stand-in
  const numeric = (id: number | string) => (typeof id === 'string' ? Number(id) : id)
  const described = (row: ContentRow, visible: boolean, ctx: { appUrl: string; baseUrl: string }) => {
    const value = content.titleColumn ? row[content.titleColumn] : undefined
    return {
      urls: { target: content.appUrl(ctx.appUrl, row), ...(variants?.(row, ctx.baseUrl.replace(/\/$/, '')) ?? {}) },
      title: typeof value === 'string' ? value : null,
      visible,
    }
  }
  return {
    alias: content.alias,
    sharedItemTypes: [content.alias] as readonly string[],
    idType: 'integer' as const,
    exists: (db: Db, tenantId: number, id: number | string) => content.exists(db, tenantId, numeric(id)),
    canView: (db: Db, actor: Actor, id: number | string) => content.canView(db, actor, numeric(id)),
    /** Existence and the view rule in one statement (creating or retargeting a shared item). */
    visibility: async (db: Db, actor: Actor, id: number | string) =>
      (await content.findStoredForViewer(db, actor, numeric(id)))?.visible,
    /** SQL: the record exists and the actor can view it (a shared item is inserted only if so). */
    viewableSql: (db: Db, actor: Actor, id: number | string) => content.viewableSql(db, actor, numeric(id)),
    /** One statement: existence, whether the actor can view it, the URLs and the title (a stable-URL click is the hottest path). */
    async describe(id: number | string, ctx: { appUrl: string; baseUrl: string; db: Db; actor: Actor }) {
      const found = await content.findStoredForViewer(ctx.db, ctx.actor, numeric(id))
      return found && described(found.row, found.visible, ctx)
    },
    /** Left-joins the record (as `t`, its id given as text by `idText`) and the actor's visibility onto the caller's query. */
    joinTarget(query: AnySelect, actor: Actor, idText: RawBuilder<unknown>): AnySelect {
      return leftJoinContentTarget(query, content.table, actor.tenantId, idText, (t) =>
        content.visibleToActor(actor, t),
      )
    },
    /** `describe`'s answer read off a row of a query `joinTarget` extended; undefined when the record does not exist. */
    describeJoined(row: Record<string, unknown>, ctx: { appUrl: string; baseUrl: string }) {
      if (row.id === null || row.id === undefined) return undefined
      return described(contentRow(row), row.visible_to_actor === true, ctx)
    },
  }
}
