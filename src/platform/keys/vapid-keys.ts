import { sql } from 'kysely'
import webPush from 'web-push'
import type { Db } from '../db/schema.js'

/** The API's VAPID key pair (RFC 8292), base64url: the public key is the uncompressed P-256 point. */
export interface VapidKeys { publicKey: string; privateKey: string }

let cached: Promise<VapidKeys> | undefined

/** The key pair, created on first use (once, whatever the number of processes), like the signing keys. */
export function vapidKeys(db: Db): Promise<VapidKeys> {
  cached ??= (async () => {
    const existing = await db.selectFrom('push_vapid_keys').select(['public_key', 'private_key']).orderBy('id').executeTakeFirst()
    if (existing) return { publicKey: existing.public_key, privateKey: existing.private_key }
    return db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext('workplace:push_vapid_keys'))`.execute(trx)
      const again = await trx.selectFrom('push_vapid_keys').select(['public_key', 'private_key']).orderBy('id').executeTakeFirst()
      if (again) return { publicKey: again.public_key, privateKey: again.private_key }
      const generated = webPush.generateVAPIDKeys()
      await trx.insertInto('push_vapid_keys').values({ public_key: generated.publicKey, private_key: generated.privateKey }).execute()
      return generated
    })
  })().catch((error) => {
    cached = undefined
    throw error
  })
  return cached
}
