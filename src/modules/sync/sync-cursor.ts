import { createHash } from 'node:crypto'
import type { Actor } from '../../platform/auth/actor.js'
import { AppError } from '../../platform/http/errors.js'
import { isSealed, type SecretBox } from '../../platform/secrets/secret-box.js'
import type { SyncSource } from '../../platform/sync/sync-source.js'

/** Bump when the feed's meaning changes: every cursor issued before answers 410 sync_reset. */
const PROTOCOL = 1

/** What a cursor says: whose it is, the client view it stands for, the version it is complete up to. */
export interface SyncCursor {
  tenant: number
  user: number
  device: string
  view: number
  version: number
  schema: string
}

const tags = new WeakMap<ReadonlyMap<string, SyncSource>, string>()

/** The tag of the feed's shape: the protocol and each source's name and schema version (once per composition). */
export function schemaTag(sources: ReadonlyMap<string, SyncSource>): string {
  let tag = tags.get(sources)
  if (tag === undefined) {
    const parts = [...sources.values()].map((s) => `${s.entity}:${s.schemaVersion ?? 1}`).sort()
    tag = createHash('sha256')
      .update(`${PROTOCOL}|${parts.join(',')}`)
      .digest('base64url')
      .slice(0, 12)
    tags.set(sources, tag)
  }
  return tag
}

/** The client must start over without a cursor (problem+json 410, `code: sync_reset`). */
export const syncReset = (why: string) =>
  new AppError(410, 'sync_reset', `This cursor cannot be continued (${why}); sync again without a cursor`, {
    cursor: [why],
  })

/**
 * Cursors are sealed with the app's secret box (AES-256-GCM, the keys of `workplace secrets`): opaque
 * to clients, and a changed byte fails authentication. A key rotation keeps old keys for opening.
 */
export function sealCursor(box: SecretBox, cursor: SyncCursor): string {
  const sealed = box.seal(
    JSON.stringify([cursor.tenant, cursor.user, cursor.device, cursor.view, cursor.version, cursor.schema]),
  )
  return Buffer.from(sealed).toString('base64url')
}

/** Opens a cursor for this actor, device and feed shape, or throws 410 sync_reset naming why. */
export function openCursor(box: SecretBox, text: string, actor: Actor, device: string, schema: string): SyncCursor {
  let cursor: SyncCursor
  try {
    const sealed = Buffer.from(text, 'base64url').toString()
    // `open` passes plain text through: only a sealed value is a cursor this server issued
    if (!isSealed(sealed)) throw new Error('not sealed')
    const parsed: unknown = JSON.parse(box.open(sealed))
    if (!Array.isArray(parsed)) throw new Error('malformed cursor')
    const [tenant, user, dev, view, version, tag] = parsed as unknown[]
    if (typeof dev !== 'string' || typeof tag !== 'string') throw new Error('malformed cursor')
    cursor = {
      tenant: Number(tenant),
      user: Number(user),
      device: dev,
      view: Number(view),
      version: Number(version),
      schema: tag,
    }
  } catch {
    throw syncReset('not a cursor of this server')
  }
  if (cursor.tenant !== actor.tenantId || cursor.user !== actor.userId) throw syncReset('issued to another user')
  if (cursor.device !== device) throw syncReset('issued to another device')
  if (cursor.schema !== schema) throw syncReset('the feed changed shape')
  return cursor
}
