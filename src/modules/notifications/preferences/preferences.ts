import type { Actor } from '../../../platform/auth/actor.js'
import type { Db } from '../../../platform/db/schema.js'
import { FieldErrorCollector } from '../../../platform/http/errors.js'
import { recordSyncWrites } from '../../../platform/sync/change-log.js'
import { preferencesChange } from '../notifications.feed.js'
import { categoryOf } from './categories.js'
import * as queries from './preferences.queries.js'
import type { NotificationPreferencesBody, PreferenceChange } from '../push/push.schemas.js'

/** The user's channels per category (one row per notification setting; defaults push and email on). */
export async function readPreferences(db: Db, actor: Actor) {
  const [preferences, user] = await Promise.all([
    queries.selectPreferences(db, actor.tenantId, actor.userId),
    queries.findEmailDigest(db, actor.tenantId, actor.userId),
  ])
  return { email_digest: user.email_digest, preferences }
}

/** Applies a partial change (unknown setting ids → 422 naming the element); one transaction. */
export async function changePreferences(db: Db, actor: Actor, body: NotificationPreferencesBody) {
  const changes: PreferenceChange[] = Array.isArray(body) ? body : (body.preferences ?? [])
  const digest = Array.isArray(body) ? undefined : body.email_digest
  const path = Array.isArray(body)
    ? (i: number) => `${i}.notification_setting_id`
    : (i: number) => `preferences.${i}.notification_setting_id`
  const known = new Set(
    await queries.selectSettingIdsAmong(
      db,
      actor.tenantId,
      changes.map((c) => c.notification_setting_id),
    ),
  )
  const problems = new FieldErrorCollector()
  changes.forEach((change, i) => {
    if (!known.has(change.notification_setting_id))
      problems.add(path(i), 'is not a notification setting of this tenant')
  })
  problems.throwIfAny()
  await db.transaction().execute(async (trx) => {
    for (const change of changes) await queries.upsertPreference(trx, actor.tenantId, actor.userId, change)
    if (digest) await queries.updateEmailDigest(trx, actor.tenantId, actor.userId, digest)
    // the user's offline clients get them again (issue 43)
    await recordSyncWrites(trx, actor.tenantId, { changes: [preferencesChange(actor.userId)] })
  })
  return readPreferences(db, actor)
}

/** For a batch of records of one type: the users who muted its category on push, and on email. */
export async function mutedChannels(
  db: Db,
  tenantId: number,
  notificationType: string,
  userIds: number[],
): Promise<{ push: Set<number>; email: Set<number> }> {
  const rows =
    userIds.length === 0
      ? []
      : await queries.selectCategoryPreferences(db, tenantId, categoryOf(notificationType), userIds)
  return {
    push: new Set(rows.filter((r) => !r.push).map((r) => r.user_id)),
    email: new Set(rows.filter((r) => !r.email).map((r) => r.user_id)),
  }
}
