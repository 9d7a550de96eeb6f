import { Readable } from 'node:stream'
import type { AppDeps } from '../../platform/app-module.js'
import type { Actor } from '../../platform/auth/actor.js'
import type { Db } from '../../platform/db/schema.js'
import type { PubSub } from '../../platform/realtime/pg-pubsub.js'
import { secretBoxFor } from '../../platform/secrets/secret-box.js'
import { isSyncChannelMessage, SYNC_CHANNEL } from '../../platform/sync/change-log.js'
import type { SyncRecord, SyncSource } from '../../platform/sync/sync-source.js'
import { openCursor, schemaTag, sealCursor, type SyncCursor, syncReset } from './sync-cursor.js'
import * as queries from './sync.queries.js'
import type { SyncChange, SyncQuery, SyncResponse } from './sync.schemas.js'
import { syncSources } from './sync-sources.js'

/** Records read per statement (a snapshot's page, a batch of changed ids). */
const READ_BATCH = 200
/** Change records one incremental answer covers before it says `has_more` (access recomputations are whole). */
const CHANGES_PAGE = 500
const ALL_CHANGES = 1_000_000
/** Client views kept per device: a cursor older than the device's last `KEEP_VIEWS` answers 410. */
const KEEP_VIEWS = 16
const DEFAULT_DEVICE = 'default'

export type SyncService = ReturnType<typeof createSyncService>

const wireId = (source: SyncSource, id: string): number | string => (source.idType === 'integer' ? Number(id) : id)
const idOf = (source: SyncSource, actor: Actor, row: SyncRecord): string => String(source.idOf?.(row, actor) ?? row.id)
const batches = <T>(items: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))
/** Where a client view keeps how a source's records were presented to it (`SyncSource.presentation`). */
const presentationKey = (source: SyncSource) => `${source.entity}#presentation`

export function createSyncService({ db, config, pubsub }: Pick<AppDeps, 'db' | 'config'> & { pubsub: PubSub }) {
  const box = secretBoxFor(config.secrets)
  const urls = { baseUrl: config.baseUrl, appUrl: config.appUrl }
  const sources = () => [...syncSources().values()]
  const tag = () => schemaTag(syncSources())
  const seal = (actor: Actor, device: string, view: number, version: number) =>
    sealCursor(box, { tenant: actor.tenantId, user: actor.userId, device, view, version, schema: tag() })

  /** The upserts of records read for the actor, with their versions. */
  async function upserts(trx: Db, actor: Actor, source: SyncSource, rows: SyncRecord[]): Promise<SyncChange[]> {
    const ids = rows.map((row) => idOf(source, actor, row))
    const versions = await queries.selectVersions(trx, actor.tenantId, actor.userId, source.entity, ids)
    return rows.map((row, i) => ({
      op: 'upsert' as const,
      entity: source.entity,
      id: wireId(source, ids[i]!),
      version: versions.get(ids[i]!) ?? 0,
      data: row,
    }))
  }

  /**
   * The full snapshot as a JSON stream: every record of every source the actor may see, page by page
   * (flat memory but for the ids, kept for the client view), then the cursor. The version is read
   * first: a change committed meanwhile is replayed by the next sync, never lost.
   */
  function snapshot(actor: Actor, device: string): Readable {
    async function* chunks() {
      const { version } = await queries.findSettledClock(db, actor.tenantId)
      const items: queries.ViewItems = {}
      let separator = ''
      yield '{"changes":['
      for (const source of sources()) {
        const held: string[] = []
        for (let after: string | null = null; ;) {
          const rows = await source.read(db, actor, { after, limit: READ_BATCH }, urls)
          if (rows.length === 0) break
          const ops = await upserts(db, actor, source, rows)
          held.push(...ops.map((op) => String(op.id)))
          let chunk = ''
          for (const op of ops) {
            chunk += `${separator}${JSON.stringify(op)}`
            separator = ','
          }
          yield chunk
          if (rows.length < READ_BATCH) break
          after = idOf(source, actor, rows.at(-1)!)
        }
        items[source.entity] = held
        if (source.presentation) items[presentationKey(source)] = [source.presentation(actor)]
      }
      const view = await db
        .transaction()
        .execute((trx) => queries.insertView(trx, actor.tenantId, actor.userId, device, version, items, KEEP_VIEWS))
      yield `],"cursor":${JSON.stringify(seal(actor, device, view, version))},"has_more":false}`
    }
    return Readable.from(chunks(), { objectMode: false })
  }

  /**
   * What changed for the actor since the cursor. Without an access change about the user, only the
   * changed records are looked at (visibility of those ids, then their data); after one, the user's
   * visible ids are recomputed, set-based, and diffed against the client view the cursor stands for.
   */
  async function changesSince(actor: Actor, device: string, cursor: SyncCursor, sealed: string): Promise<SyncResponse> {
    const state = await queries.findCursorState(db, actor.tenantId, actor.userId, device, cursor.view)
    if (!state.kept) throw syncReset('older than the cursors kept for this device')
    const clock = await queries.settledClock(db, actor.tenantId, state)
    if (cursor.version < clock.horizon) throw syncReset('older than the change records kept')
    // nothing changed: the client's own cursor still says where it stands (no sealing on the idle path)
    if (clock.version <= cursor.version) return { changes: [], cursor: sealed, has_more: false }
    const accessChanged = await queries.accessChangedSince(db, actor.tenantId, actor, cursor.version, clock.version)
    let until = clock.version
    let rows = await queries.selectChanges(
      db,
      actor.tenantId,
      actor.userId,
      cursor.version,
      until,
      accessChanged ? ALL_CHANGES : CHANGES_PAGE + 1,
    )
    const hasMore = !accessChanged && rows.length > CHANGES_PAGE
    if (hasMore) {
      // cut at a version: every change of the last version answered is in this answer
      until = rows[CHANGES_PAGE - 1]!.version
      rows = await queries.selectChanges(db, actor.tenantId, actor.userId, cursor.version, until, ALL_CHANGES)
    }
    const wholeView = async () => {
      const found = await queries.findView(db, actor.tenantId, actor.userId, device, cursor.view)
      // purged since the first read (a newer cursor of the device, or the retention)
      if (!found) throw syncReset('older than the cursors kept for this device')
      return found
    }
    // without an access change only the changed records are looked at: of the client view, only which
    // of them it holds is read (a view holds every record the user sees: 255,000 ids in the bench)
    let view = accessChanged ? await wholeView() : await queries.findViewAmong(db, actor, device, cursor.view, rows)
    if (!view) throw syncReset('older than the cursors kept for this device')
    const presentedOtherwise = (source: SyncSource, among: queries.ViewItems) => {
      const presentation = source.presentation?.(actor)
      return presentation !== undefined && among[presentationKey(source)]?.[0] !== presentation
    }
    const partial = !accessChanged && !sources().some((source) => presentedOtherwise(source, view!))
    if (!accessChanged && !partial) view = await wholeView()
    const changes: SyncChange[] = []
    const moved = new Map<string, { lost: Set<string>; added: string[] }>()
    let viewChanged = false
    for (const source of sources()) {
      const held = new Set(view[source.entity] ?? [])
      const changed = rows.filter((row) => row.entity === source.entity).map((row) => row.entity_id)
      // presented otherwise now (the actor's permissions changed): every visible record again
      const represent = presentedOtherwise(source, view)
      const recompute = accessChanged || represent
      const visible = new Set(await source.visibleIds(db, actor, recompute ? undefined : changed))
      const wanted = new Set(changed.filter((id) => visible.has(id)))
      if (recompute) for (const id of visible) if (represent || !held.has(id)) wanted.add(id)
      const lost = new Set(
        [...(recompute ? held : changed.filter((id) => held.has(id)))].filter((id) => !visible.has(id)),
      )
      const got = new Set<string>()
      for (const ids of batches([...wanted], READ_BATCH)) {
        const ops = await upserts(db, actor, source, await source.read(db, actor, { ids }, urls))
        for (const op of ops) got.add(String(op.id))
        changes.push(...ops)
      }
      // wanted but no longer readable (its visibility changed since): the client drops it if it has it
      for (const id of wanted) if (!got.has(id) && held.has(id)) lost.add(id)
      const existing = await source.existingIds(db, actor.tenantId, [...lost])
      for (const id of lost) {
        changes.push({
          op: 'remove',
          entity: source.entity,
          id: wireId(source, id),
          reason: existing.has(id) ? 'access_lost' : 'deleted',
        })
      }
      const added = [...got].filter((id) => !held.has(id))
      if (lost.size > 0 || added.length > 0 || represent) viewChanged = true
      moved.set(source.entity, { lost, added })
    }
    let viewId = cursor.view
    if (viewChanged) {
      const base = partial ? await wholeView() : view
      const next: queries.ViewItems = {}
      for (const source of sources()) {
        const { lost, added } = moved.get(source.entity)!
        next[source.entity] = [...(base[source.entity] ?? []).filter((id) => !lost.has(id)), ...added]
        const presentation = source.presentation?.(actor)
        if (presentation !== undefined) next[presentationKey(source)] = [presentation]
      }
      viewId = await db
        .transaction()
        .execute((trx) => queries.insertView(trx, actor.tenantId, actor.userId, device, until, next, KEEP_VIEWS))
    }
    return { changes, cursor: seal(actor, device, viewId, until), has_more: hasMore }
  }

  // long-polls waiting for a tenant's change, in this process (one LISTEN for all of them)
  const waiting = new Map<number, Set<() => void>>()
  let listening: Promise<unknown> | undefined
  function onMessage(payload: unknown) {
    if (!isSyncChannelMessage(payload)) return
    for (const wake of waiting.get(payload.tenant) ?? []) wake()
  }
  /** Resolves on the tenant's next change (on any node) or at the deadline; armed before the caller reads. */
  async function armWakeUp(tenantId: number, deadline: number) {
    listening ??= pubsub.subscribe(SYNC_CHANNEL, onMessage).catch((error: unknown) => {
      listening = undefined
      throw error
    })
    await listening
    let wake!: () => void
    const woken = new Promise<void>((resolve) => (wake = resolve))
    const set = waiting.get(tenantId) ?? new Set()
    waiting.set(tenantId, set.add(wake))
    const timer = setTimeout(wake, Math.max(0, deadline - Date.now()))
    const done = woken.finally(() => {
      clearTimeout(timer)
      set.delete(wake)
      if (set.size === 0) waiting.delete(tenantId)
    })
    return { done, cancel: () => wake() }
  }

  /**
   * The actor's feed (docs/sync.md): a snapshot without a cursor, else the changes since it; with
   * `wait`, an answer without changes is held until something changes for the tenant or the seconds pass.
   */
  async function sync(actor: Actor, query: SyncQuery): Promise<SyncResponse | Readable> {
    const device = query.device ?? DEFAULT_DEVICE
    if (query.cursor === undefined) return snapshot(actor, device)
    let sealed = query.cursor
    let cursor = openCursor(box, sealed, actor, device, tag())
    const deadline = Date.now() + (query.wait ?? 0) * 1000
    for (;;) {
      const wakeUp = query.wait ? await armWakeUp(actor.tenantId, deadline) : undefined
      const answer = await changesSince(actor, device, cursor, sealed).catch((error: unknown) => {
        wakeUp?.cancel()
        throw error
      })
      if (answer.changes.length > 0 || answer.has_more || !wakeUp || Date.now() >= deadline) {
        wakeUp?.cancel()
        return answer
      }
      sealed = answer.cursor
      cursor = openCursor(box, sealed, actor, device, tag())
      await wakeUp.done
      if (Date.now() >= deadline) return changesSince(actor, device, cursor, sealed)
    }
  }

  return { sync }
}
