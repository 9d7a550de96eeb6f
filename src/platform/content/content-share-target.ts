import type { Actor } from '../auth/actor.js'
import type { Db } from '../db/schema.js'
import type { ContentResource, ContentRow } from './content-resource.js'

/** Extra URL variants of a target (file content/download/poster), from its stored row. */
export type VariantUrls = (row: ContentRow, baseUrl: string) => Record<string, string>

/**
 * The share-target shape the shared-items module registers (contract 30), derived from a content
 * resource: same-named shared item type, existence, the normal view rule, the app URL. Structural,
 * so that the platform needs no import of the shared-items module.
 */
export function contentShareTarget(content: ContentResource, variants?: VariantUrls) {
  const numeric = (id: number | string) => Number(id)
  return {
    alias: content.alias,
    sharedItemTypes: [content.alias] as readonly string[],
    idType: 'integer' as const,
    exists: (db: Db, tenantId: number, id: number | string) => content.exists(db, tenantId, numeric(id)),
    canView: (db: Db, actor: Actor, id: number | string) => content.canView(db, actor, numeric(id)),
    /** One statement: existence, whether the actor can view it, the URLs and the title (a stable-URL click is the hottest path). */
    async describe(id: number | string, ctx: { appUrl: string; baseUrl: string; db: Db; actor: Actor }) {
      const found = await content.findStoredForViewer(ctx.db, ctx.actor, numeric(id))
      if (!found) return undefined
      const { row, visible } = found
      const value = content.titleColumn ? row[content.titleColumn] : undefined
      return {
        urls: { target: content.appUrl(ctx.appUrl, row), ...(variants?.(row, ctx.baseUrl.replace(/\/$/, '')) ?? {}) },
        title: typeof value === 'string' ? value : null,
        visible,
      }
    },
  }
}
