import { secretBoxFor } from '../../platform/secrets/secret-box.js'
import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import { shapedStatement, executeCompiled } from '../../platform/db/database.js'
import { AppError, FieldErrorCollector, notFound } from '../../platform/http/errors.js'
import { parseBooleanWord, URL_FLAG_WORDS } from '../../platform/text/boolean-words.js'
import { issueGrantToken } from './grant-tokens.js'
import {
  lookupShareTarget,
  parseShareTargetId,
  type ShareTargetDef,
  type ShareTargetId,
  type ShareTargetUrls,
} from './share-targets.js'
import { viewableSql } from './shared-items.access.js'
import * as queries from './shared-items.queries.js'
import { URL_TYPE_FLAGS, type ResolveQuery, type ResolveResult, type UrlTypeFlag } from './shared-items.schemas.js'

const NO_REDIRECT: ResolveResult = { redirect: false, url: null, url_context: null }

/**
 * The target URL type asked for: at most one of `showFileContent`, `downloadFileContent`,
 * `filePoster` may be true (a bare `?showFileContent` counts as true). Two or more → 422 on each.
 */
export function requestedUrlType(query: ResolveQuery): UrlTypeFlag | undefined {
  const problems = new FieldErrorCollector()
  const set: UrlTypeFlag[] = []
  for (const flag of URL_TYPE_FLAGS) {
    const raw = query[flag]
    if (raw === undefined) continue
    const value = typeof raw === 'boolean' ? raw : parseBooleanWord(raw, URL_FLAG_WORDS)
    if (value === undefined) problems.add(flag, 'must be a boolean')
    else if (value) set.push(flag)
  }
  problems.throwIfAny()
  if (set.length > 1) {
    for (const flag of set) problems.add(flag, `at most one of ${URL_TYPE_FLAGS.join(', ')} may be given`)
    problems.throwIfAny('Only one target URL type can be requested at a time')
  }
  return set[0]
}

function withGrantToken(url: string, token: string): string {
  const parsed = new URL(url)
  parsed.searchParams.set('grant_token', token)
  return parsed.toString()
}

export type SharedItemResolver = ReturnType<typeof createSharedItemResolver>

/** How many shared items' target kinds a process remembers (a hint: the statement re-checks it). */
const TARGET_KIND_HINTS_MAX = 50_000

interface ResolvedItem {
  id: string
  redirect_type: string
  targetable_type: string
  targetable_id: string
  tenant_slug: string
}
type DescribedTarget = { urls: ShareTargetUrls; title: string | null; visible: boolean }

export function createSharedItemResolver({ db, config }: AppDeps) {
  const secrets = secretBoxFor(config.secrets)
  const urlContext = { appUrl: config.appUrl, baseUrl: config.baseUrl }
  /**
   * The target kind (`targetable_type`) of items resolved before. With it, the click is one statement:
   * the item joined with its target, on the condition that the item still has that kind. A stale hint
   * (the item was retargeted, maybe on another node) finds no row and falls back to two statements.
   */
  const targetKinds = new Map<string, string>()
  const remember = (id: string, kind: string) => {
    if (targetKinds.size >= TARGET_KIND_HINTS_MAX) targetKinds.clear()
    targetKinds.set(id, kind)
  }

  const itemQuery = (actor: Actor, id: string) =>
    queries
      .selectSharedItems(db, actor.tenantId)
      .innerJoin('tenants as tn', 'tn.id', 'si.tenant_id')
      .where('si.id', '=', id)
      .where(viewableSql(actor))

  /** The item (when its kind is still `def.alias`) joined with its target: built once per target kind and actor shape. */
  const joinedStatement = shapedStatement(({ actor, id }: { actor: Actor; id: string }, def: ShareTargetDef) => {
    const query = itemQuery(actor, id)
      .where('si.targetable_type', '=', def.alias)
      .select([
        'si.id as shared_item_id',
        'si.redirect_type as shared_item_redirect_type',
        'si.targetable_id as shared_item_targetable_id',
        'tn.slug as shared_item_tenant_slug',
      ])
    return def.joinTarget!(query, actor, queries.targetableIdRef())
  })

  /** One statement: the item (when its kind is still `def.alias`) and its target; undefined when no row. */
  async function findJoined(
    actor: Actor,
    id: string,
    def: ShareTargetDef,
  ): Promise<{ item: ResolvedItem; target: DescribedTarget | undefined } | undefined> {
    const [row] = await executeCompiled<Record<string, unknown>>(db, joinedStatement({ actor, id }, def))
    if (!row) return undefined
    const item = {
      id: String(row.shared_item_id),
      redirect_type: String(row.shared_item_redirect_type),
      targetable_type: def.alias,
      targetable_id: String(row.shared_item_targetable_id),
      tenant_slug: String(row.shared_item_tenant_slug),
    }
    return { item, target: def.describeJoined!(row, urlContext) }
  }

  /** Two statements: the item, then (unless it never redirects) its target. */
  async function findSeparately(
    actor: Actor,
    id: string,
  ): Promise<{ item: ResolvedItem; target: DescribedTarget | undefined } | undefined> {
    const item = await itemQuery(actor, id)
      .select(['si.id', 'si.redirect_type', 'si.targetable_type', 'si.targetable_id', 'tn.slug as tenant_slug'])
      .executeTakeFirst()
    if (!item) return undefined
    remember(id, item.targetable_type)
    if (item.redirect_type === 'none') return { item, target: undefined }
    const def = lookupShareTarget(item.targetable_type)
    const targetId = def && parseShareTargetId(def.idType, item.targetable_id)
    const target =
      def && targetId !== undefined
        ? await def.describe(targetId, { ...urlContext, db, tenantId: actor.tenantId, actor })
        : undefined
    return { item, target }
  }

  /**
   * Where a shared item leads the actor (contract 30): `none` never redirects; `redirect` only when
   * the actor can view the target (403 `target_not_accessible` otherwise); `redirectWithGrantToken`
   * always, with a grant token for exactly that target added to the URL.
   */
  async function resolveSharedItem(actor: Actor, id: string, query: ResolveQuery): Promise<ResolveResult> {
    const urlType = requestedUrlType(query)
    const hinted = lookupShareTarget(targetKinds.get(id) ?? '')
    const found =
      (hinted?.joinTarget && hinted.describeJoined && (await findJoined(actor, id, hinted))) ||
      (await findSeparately(actor, id))
    if (!found) throw notFound('Shared item')
    const { item, target } = found
    if (item.redirect_type === 'none') return NO_REDIRECT

    const def = lookupShareTarget(item.targetable_type)
    const targetId: ShareTargetId | undefined = def && parseShareTargetId(def.idType, item.targetable_id)
    if (!def || targetId === undefined || !target) {
      throw new AppError(404, 'target_not_found', 'The target of this shared item no longer exists')
    }
    if (item.redirect_type === 'redirect' && !target.visible) {
      throw new AppError(
        403,
        'target_not_accessible',
        'You cannot view the target of this shared item, so it does not redirect',
      )
    }
    const { urls, title } = target
    let url = (urlType && urls[urlType]) || urls.target
    if (item.redirect_type === 'redirectWithGrantToken') {
      const token = await issueGrantToken(db, {
        issuer: config.baseUrl,
        tenantSlug: item.tenant_slug,
        userId: actor.userId,
        sharedItemId: item.id,
        alias: def.alias,
        id: targetId,
        secrets,
      })
      url = withGrantToken(url, token)
    }
    return { redirect: true, url, url_context: { type: def.alias, id: targetId, title, url } }
  }

  return { resolveSharedItem }
}
