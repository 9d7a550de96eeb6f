import { createHash } from 'node:crypto'
import type { Readable } from 'node:stream'
import { sql } from 'kysely'
import type { AppDeps } from '../app-module.js'
import type { Actor } from '../auth/actor.js'
import { composedTable } from '../composition.js'
import type { Db } from '../db/schema.js'
import { AppError } from '../http/errors.js'
import type { RawListQuery } from '../query/parse-query.js'
import { isSealed, type SecretBox } from '../secrets/secret-box.js'

/**
 * The permission-aware change feed (issue 43, docs/sync.md, decision sync-feed): Replicache's
 * row-version strategy. Per client (user + device) `sync_client_rows` holds the version of every entity
 * it was last sent; a sync recomputes the user's visible set through each entity's own list read (THE
 * access rule, its presenter: exactly what its GET answers), and diffs: new or changed → upsert, gone →
 * remove (`deleted` when the row no longer exists, else `access_lost`). A sync with nothing to do costs
 * one indexed read: the tenant's clock (`sync_clocks`, bumped by every write the feed reads) equals the
 * one the client's view was last computed at.
 */

/** One kind of entity of the feed, contributed by its module. */
export interface SyncSource {
  /** Its name on the wire (`notification`, `folder`, `infoboardPost`, `manualEntry`). */
  entity: string
  /** Its table: a removed id still there (and not soft-deleted) was lost by access, not deleted. */
  table: string
  /** The type of its `id` column (notifications have uuids). */
  idType: 'bigint' | 'uuid'
  softDelete?: boolean
  /**
   * The entity's list read for the user (the list endpoint's service function): called with
   * `sort=id`, a `limit` and `filter[id][gt]`, it answers one page of presented records.
   */
  list(actor: Actor, query: RawListQuery): Promise<Readable | Record<string, unknown>[]>
  /** The earliest future time the user's set may change without a write (a scheduled record), if any. */
  recheckAt?(db: Db, tenantId: number): Promise<string | null>
}

declare module '../app-module.js' {
  interface AppModule {
    /** The entities this module adds to the change feed (`GET /api/sync`), made from the app's dependencies. */
    syncSources?: (deps: AppDeps) => SyncSource[]
  }
}

const sourceFactories = composedTable((modules) =>
  modules.flatMap((module) => (module.syncSources ? [module.syncSources] : [])),
)

export type SyncChange =
  | { op: 'upsert'; entity: string; id: SyncId; version: string; data: Record<string, unknown> }
  | { op: 'remove'; entity: string; id: SyncId; reason: 'deleted' | 'access_lost' }

/** An entity's id as its GET answers it: a number, or a uuid string. */
export type SyncId = number | string

export interface SyncAnswer {
  changes: SyncChange[]
  cursor: string
  has_more: boolean
}

/** Bumped when what a version means changes (entities, presenters): every older cursor is then reset. */
export const SYNC_SCHEMA_VERSION = 1
const CURSOR_PREFIX = 'sync1.'
/** Records read per page of an entity's list while recomputing a view. */
const PAGE = 1000

interface CursorClaims {
  t: number
  u: number
  c: number
  g: number
  s: number
}

export interface SyncOptions {
  db: Db
  box: SecretBox
  /** Days a client may stay away before its record is dropped and its cursor answers 410. */
  retentionDays: number
  /** What the composed modules' sync sources are made from. */
  deps: AppDeps
}

/** An id as the entity's GET answers it (stored as text in `sync_client_rows`). */
const wireId = (source: SyncSource, id: string): SyncId => (source.idType === 'uuid' ? id : Number(id))

const reset = (message: string) => new AppError(410, 'sync_reset', `${message}: start over without a cursor`)

function isClaims(value: unknown): value is CursorClaims {
  if (typeof value !== 'object' || value === null) return false
  const record: Record<string, unknown> = { ...value }
  return ['t', 'u', 'c', 'g', 's'].every((key) => Number.isSafeInteger(record[key]))
}

/** The version of presented data: a hash of its JSON (stable for the same answer). */
function versionOf(data: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(data)).digest('base64url').slice(0, 22)
}

export function createSyncFeed({ db, box, retentionDays, deps }: SyncOptions) {
  // the composed modules' entities, by name (a later module's entity of the same name wins), made once
  let sourcesByEntity: Map<string, SyncSource> | undefined
  const sources = () =>
    (sourcesByEntity ??= new Map(
      sourceFactories()
        .flatMap((make) => make(deps))
        .map((source) => [source.entity, source]),
    ))

  const sign = (claims: CursorClaims) =>
    CURSOR_PREFIX + Buffer.from(box.seal(JSON.stringify(claims))).toString('base64url')

  /** The claims of a cursor this server issued to this user, or 410 `sync_reset`. */
  function openCursor(actor: Actor, cursor: string): CursorClaims {
    let claims: CursorClaims
    try {
      if (!cursor.startsWith(CURSOR_PREFIX)) throw new Error('not a sync cursor')
      const sealed = Buffer.from(cursor.slice(CURSOR_PREFIX.length), 'base64url').toString('utf8')
      if (!isSealed(sealed)) throw new Error('not sealed')
      const parsed: unknown = JSON.parse(box.open(sealed))
      if (!isClaims(parsed)) throw new Error('not the claims of a sync cursor')
      claims = parsed
    } catch {
      throw reset('The cursor is not valid')
    }
    if (claims.s !== SYNC_SCHEMA_VERSION) throw reset('The feed changed since this cursor was issued')
    if (claims.t !== actor.tenantId || claims.u !== actor.userId) throw reset('The cursor belongs to another user')
    return claims
  }

  /** The visible records of one source, presented, in id order, page by page. */
  async function* visibleOf(source: SyncSource, actor: Actor): AsyncGenerator<Record<string, unknown>[]> {
    let after: string | undefined
    for (;;) {
      const filter = after === undefined ? undefined : { id: { gt: after } }
      const page = await source.list(actor, { sort: 'id', limit: PAGE, ...(filter ? { filter } : {}) })
      if (!Array.isArray(page)) throw new Error(`sync source ${source.entity} streamed a limited list`)
      if (page.length > 0) yield page
      if (page.length < PAGE) return
      after = String(page[page.length - 1].id)
    }
  }

  /** The ids of `ids` whose row still exists (not soft-deleted) in the source's table. */
  async function stillThere(trx: Db, source: SyncSource, tenantId: number, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set()
    const alive = source.softDelete ? sql` and deleted_at is null` : sql``
    const idArray = source.idType === 'uuid' ? sql`${ids}::uuid[]` : sql`${ids}::bigint[]`
    const { rows } = await sql<{ id: string }>`select id::text as id from ${sql.table(source.table)}
      where tenant_id = ${tenantId} and id = any(${idArray})${alive}`.execute(trx)
    return new Set(rows.map((r) => r.id))
  }

  /**
   * One sync of the user's device: from `cursor` (or from nothing: the record is reset and everything
   * is sent), at most `limit` changes; the record is written in the same transaction as the answer is made.
   */
  async function sync(actor: Actor, deviceId: string, cursor: string | undefined, limit: number): Promise<SyncAnswer> {
    const claims = cursor === undefined ? undefined : openCursor(actor, cursor)
    // the idle sync: one indexed read, nothing written, the same claims again
    if (claims !== undefined && (await isIdle(actor, deviceId, claims)))
      return { changes: [], cursor: sign(claims), has_more: false }
    return db.transaction().execute(async (trx) => {
      const tenantId = actor.tenantId
      await sql`insert into sync_clocks (tenant_id) values (${tenantId}) on conflict (tenant_id) do nothing`.execute(
        trx,
      )
      const [{ seq }] = (
        await sql<{ seq: string }>`select seq from sync_clocks where tenant_id = ${tenantId}`.execute(trx)
      ).rows
      const clock = Number(seq)
      const client = await openClient(trx, actor, deviceId, claims)
      const idle =
        client.clock_seq !== null &&
        Number(client.clock_seq) === clock &&
        (client.recheck_at === null || client.recheck_due === false)
      const changes: SyncChange[] = []
      let complete = true
      let recheckAt: string | null = null
      if (!idle) {
        for (const source of sources().values()) {
          const done = await diffSource(trx, source, actor, client.id, limit - changes.length, changes)
          if (!done) {
            complete = false
            break
          }
          const next = (await source.recheckAt?.(trx, tenantId)) ?? null
          if (next !== null && (recheckAt === null || next < recheckAt)) recheckAt = next
        }
      }
      const generation = client.generation + 1
      await sql`update sync_clients set generation = ${generation}, synced_at = now(),
          clock_seq = ${idle ? client.clock_seq : complete ? clock : null},
          recheck_at = ${idle ? client.recheck_at : recheckAt}
        where tenant_id = ${tenantId} and id = ${client.id}`.execute(trx)
      return {
        changes,
        cursor: sign({ t: tenantId, u: actor.userId, c: client.id, g: generation, s: SYNC_SCHEMA_VERSION }),
        has_more: !complete,
      }
    })
  }

  interface ClientRow {
    id: number
    generation: number
    clock_seq: string | null
    recheck_at: string | null
    recheck_due: boolean
  }

  /** The client's record, locked: reset for a sync without cursor; 410 when the cursor does not name its current generation. */
  async function openClient(
    trx: Db,
    actor: Actor,
    deviceId: string,
    claims: CursorClaims | undefined,
  ): Promise<ClientRow> {
    const tenantId = actor.tenantId
    const { rows } = await sql<ClientRow & { stale: boolean }>`select id, generation, clock_seq, recheck_at,
        (recheck_at is not null and recheck_at <= now()) as recheck_due,
        synced_at < now() - make_interval(days => ${retentionDays}) as stale
      from sync_clients where tenant_id = ${tenantId} and user_id = ${actor.userId} and device_id = ${deviceId}
      for update`.execute(trx)
    const found = rows[0]
    if (claims !== undefined) {
      if (!found || Number(found.id) !== claims.c || found.generation !== claims.g)
        throw reset('The cursor is not the latest of this device')
      // its record is deleted by the retention job (sync:prune), or reset by the snapshot that follows
      if (found.stale) throw reset('The cursor is older than the retention of change records')
      return { ...found, id: Number(found.id) }
    }
    if (found) {
      await sql`delete from sync_client_rows where tenant_id = ${tenantId} and client_id = ${found.id}`.execute(trx)
      return { ...found, id: Number(found.id), clock_seq: null, recheck_at: null, recheck_due: false }
    }
    const created = await sql<{ id: string }>`insert into sync_clients (tenant_id, user_id, device_id)
      values (${tenantId}, ${actor.userId}, ${deviceId}) returning id`.execute(trx)
    return { id: Number(created.rows[0].id), generation: 0, clock_seq: null, recheck_at: null, recheck_due: false }
  }

  /**
   * Appends the source's changes for the client (at most `room`) and records them as sent; false when
   * the room ran out before its removes were known (the next page goes on from there).
   */
  async function diffSource(
    trx: Db,
    source: SyncSource,
    actor: Actor,
    clientId: number,
    room: number,
    changes: SyncChange[],
  ): Promise<boolean> {
    const tenantId = actor.tenantId
    const { rows: sentRows } = await sql<{ entity_id: string; version: string }>`select entity_id, version
      from sync_client_rows where tenant_id = ${tenantId} and client_id = ${clientId} and entity = ${source.entity}`.execute(
      trx,
    )
    const sent = new Map(sentRows.map((r) => [r.entity_id, r.version]))
    const seen = new Set<string>()
    const upserts: Array<{ id: string; version: string }> = []
    let full = false
    for await (const page of visibleOf(source, actor)) {
      for (const data of page) {
        const id = String(data.id)
        seen.add(id)
        const version = versionOf(data)
        if (sent.get(id) === version) continue
        if (upserts.length >= room) {
          full = true
          break
        }
        changes.push({ op: 'upsert', entity: source.entity, id: wireId(source, id), version, data })
        upserts.push({ id, version })
      }
      if (full) break
    }
    if (upserts.length > 0) {
      await sql`insert into sync_client_rows (tenant_id, client_id, entity, entity_id, version)
        select ${tenantId}, ${clientId}, ${source.entity}, u.id, u.version
          from unnest(${upserts.map((u) => u.id)}::text[], ${upserts.map((u) => u.version)}::text[]) as u(id, version)
        on conflict (tenant_id, client_id, entity, entity_id) do update set version = excluded.version`.execute(trx)
    }
    if (full) return false
    const gone = [...sent.keys()].filter((id) => !seen.has(id))
    const removable = gone.slice(0, Math.max(0, room - upserts.length))
    if (removable.length > 0) {
      const there = await stillThere(trx, source, tenantId, removable)
      for (const id of removable)
        changes.push({
          op: 'remove',
          entity: source.entity,
          id: wireId(source, id),
          reason: there.has(id) ? 'access_lost' : 'deleted',
        })
      await sql`delete from sync_client_rows where tenant_id = ${tenantId} and client_id = ${clientId}
        and entity = ${source.entity} and entity_id = any(${removable}::text[])`.execute(trx)
    }
    return removable.length === gone.length
  }

  /**
   * Whether the cursor names the device's current record, complete at the tenant's current clock, with
   * no scheduled change due and within the retention: one indexed read (two primary-key probes).
   */
  async function isIdle(actor: Actor, deviceId: string, claims: CursorClaims): Promise<boolean> {
    const { rows } = await sql<{ idle: boolean }>`select (c.id = ${claims.c} and c.generation = ${claims.g}
        and c.clock_seq = k.seq and (c.recheck_at is null or c.recheck_at > now())
        and c.synced_at >= now() - make_interval(days => ${retentionDays})) as idle
      from sync_clients c join sync_clocks k on k.tenant_id = c.tenant_id
      where c.tenant_id = ${actor.tenantId} and k.tenant_id = ${actor.tenantId}
        and c.user_id = ${actor.userId} and c.device_id = ${deviceId}`.execute(db)
    return rows[0]?.idle === true
  }

  return {
    sync,
    isIdle: (actor: Actor, deviceId: string, cursor: string) => isIdle(actor, deviceId, openCursor(actor, cursor)),
  }
}

export type SyncFeed = ReturnType<typeof createSyncFeed>

/** `recheckAt` of a content table with scheduled publishing: its earliest future `published_at` (an indexed read). */
export function scheduledRecheck(table: string) {
  return async (db: Db, tenantId: number): Promise<string | null> => {
    const { rows } = await sql<{ at: string | null }>`select min(published_at) as at from ${sql.table(table)}
      where tenant_id = ${tenantId} and published_notified_at is null and published_at > now()`.execute(db)
    return rows[0]?.at ?? null
  }
}

/** `list` of a module-gated entity: nothing (not a 403) for a user without the module's view permission. */
export function gatedList(
  permission: string,
  list: (actor: Actor, query: RawListQuery) => Promise<Readable | Record<string, unknown>[]>,
): SyncSource['list'] {
  return async (actor, query) =>
    actor.permissions.has('*') || actor.permissions.has(permission) ? list(actor, query) : []
}

/** Records (with their rows) deleted per statement by the retention job. */
const PRUNE_BATCH = 500

/**
 * Deletes the records of devices that did not sync for longer than the retention (their next sync
 * answers 410 anyway), in short batches; the number deleted. Run daily by the worker (`sync:prune`).
 */
export async function pruneSyncClients(db: Db, retentionDays: number): Promise<number> {
  let deleted = 0
  for (;;) {
    const { numAffectedRows } = await sql`delete from sync_clients where (tenant_id, id) in (
        select tenant_id, id from sync_clients where synced_at < now() - make_interval(days => ${retentionDays})
        limit ${PRUNE_BATCH})`.execute(db)
    const batch = Number(numAffectedRows ?? 0)
    deleted += batch
    if (batch < PRUNE_BATCH) return deleted
  }
}
