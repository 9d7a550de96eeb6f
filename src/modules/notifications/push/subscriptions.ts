import { createPublicKey } from 'node:crypto'
import type { QuotaLimits } from '../../../config.js'
import type { Actor } from '../../../platform/auth/actor.js'
import type { Db } from '../../../platform/db/schema.js'
import { FieldErrorCollector, notFound } from '../../../platform/http/errors.js'
import { assertQuota } from '../../../platform/limits/quotas.js'
import type { PushSubscriptionBody } from './push.schemas.js'
import * as queries from './subscriptions.queries.js'

function decoded(value: string): Buffer {
  return Buffer.from(value.replace(/=+$/, ''), 'base64url')
}

/** 422 per field: an https endpoint (http only when private networks are allowed), a real P-256 point, a 16-byte secret. */
function checkSubscription(body: PushSubscriptionBody, allowPrivateNetworks: boolean): void {
  const problems = new FieldErrorCollector()
  let url: URL | undefined
  try {
    url = new URL(body.endpoint)
  } catch {
    problems.add('endpoint', 'must be an absolute URL')
  }
  if (url && url.protocol !== 'https:' && !(allowPrivateNetworks && url.protocol === 'http:'))
    problems.add('endpoint', 'must be an https URL')
  const point = decoded(body.keys.p256dh)
  if (point.length !== 65 || point[0] !== 4)
    problems.add('keys.p256dh', 'must be an uncompressed P-256 public key (65 bytes, base64url)')
  else {
    try {
      createPublicKey({
        key: {
          kty: 'EC',
          crv: 'P-256',
          x: point.subarray(1, 33).toString('base64url'),
          y: point.subarray(33).toString('base64url'),
        },
        format: 'jwk',
      })
    } catch {
      problems.add('keys.p256dh', 'is not a point on the P-256 curve')
    }
  }
  if (decoded(body.keys.auth).length !== 16) problems.add('keys.auth', 'must be a 16-byte secret (base64url)')
  problems.throwIfAny()
}

/**
 * A browser's subscription, registered for the current user. The same endpoint again (the browser
 * re-subscribes, or another user logs in on that device) moves the record to the current user: 200.
 * A new endpoint counts against the tenant's `push_subscriptions` quota (403 past it); a known one
 * never does, so a browser re-subscribing at the limit keeps working.
 */
export async function subscribe(
  db: Db,
  actor: Actor,
  body: PushSubscriptionBody,
  options: { allowPrivateNetworks: boolean; quotas: QuotaLimits },
) {
  checkSubscription(body, options.allowPrivateNetworks)
  return db.transaction().execute(async (trx) => {
    // whether the endpoint is new is read under the quota's lock: a concurrent first subscription of
    // the same endpoint is then seen, and this one is an update that is not counted
    await assertQuota(trx, actor.tenantId, queries.pushSubscriptionsQuota, options.quotas, async () =>
      (await queries.findSubscriptionByEndpoint(trx, actor.tenantId, body.endpoint)) ? 0 : 1,
    )
    const row = await queries.upsertSubscription(trx, actor.tenantId, actor.userId, body)
    const { inserted, ...subscription } = row
    return { subscription, created: inserted }
  })
}

export function listOwnSubscriptions(db: Db, actor: Actor) {
  return queries.selectUserSubscriptions(db, actor.tenantId, actor.userId)
}

/** Another user's subscription answers like one that does not exist. */
export async function unsubscribe(db: Db, actor: Actor, id: number): Promise<void> {
  if ((await queries.deleteUserSubscription(db, actor.tenantId, actor.userId, id)) === 0)
    throw notFound('Push subscription')
}
