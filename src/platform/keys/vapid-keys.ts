import { sql } from 'kysely'
import webPush from 'web-push'
import type { Db } from '../db/schema.js'
import { isSealed, type SecretBox, type SecretHolder } from '../secrets/secret-box.js'

/** The API's VAPID key pair (RFC 8292), base64url: the public key is the uncompressed P-256 point. */
export interface VapidKeys {
  publicKey: string
  privateKey: string
}

let cached: Promise<VapidKeys> | undefined

/**
 * The key pair, created on first use (once, whatever the number of processes), like the signing keys;
 * the private key is stored sealed by the secrets key (secrets at rest) and opened here.
 */
export function vapidKeys(db: Db, box: SecretBox): Promise<VapidKeys> {
  cached ??= (async () => {
    const opened = (row: { public_key: string; private_key: string }) => ({
      publicKey: row.public_key,
      privateKey: box.open(row.private_key),
    })
    const existing = await db
      .selectFrom('push_vapid_keys')
      .select(['public_key', 'private_key'])
      .orderBy('id')
      .executeTakeFirst()
    if (existing) return opened(existing)
    return db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext('workplace:push_vapid_keys'))`.execute(trx)
      const again = await trx
        .selectFrom('push_vapid_keys')
        .select(['public_key', 'private_key'])
        .orderBy('id')
        .executeTakeFirst()
      if (again) return opened(again)
      const generated = webPush.generateVAPIDKeys()
      await trx
        .insertInto('push_vapid_keys')
        .values({ public_key: generated.publicKey, private_key: box.seal(generated.privateKey) })
        .execute()
      return generated
    })
  })().catch((error) => {
    cached = undefined
    throw error
  })
  return cached
}

/** `workplace secrets rotate`: the VAPID private key re-sealed under the current secrets key. */
export const vapidKeySecrets: SecretHolder = {
  name: 'push_vapid_keys',
  global: true,
  async reseal(db, box) {
    let changed = 0
    for (const row of await db.selectFrom('push_vapid_keys').select(['id', 'private_key']).execute()) {
      if (isSealed(row.private_key) && !box.needsResealing(row.private_key)) continue
      const updated = await db
        .updateTable('push_vapid_keys')
        .set({ private_key: box.seal(box.open(row.private_key)) })
        .where('id', '=', row.id)
        .where('private_key', '=', row.private_key)
        .executeTakeFirst()
      changed += Number(updated.numUpdatedRows)
    }
    return changed
  },
}
