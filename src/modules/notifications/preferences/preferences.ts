import { sql } from 'kysely'
import type { Actor } from '../../../platform/auth/actor.js'
import type { Db } from '../../../platform/db/schema.js'
import { FieldErrorCollector } from '../../../platform/http/errors.js'
import { recordSyncWrites } from '../../../platform/sync/change-log.js'
import { preferencesChange } from '../notifications.feed.js'
import { categoryOf } from './categories.js'
import type { NotificationPreferencesBody, PreferenceChange } from '../push/push.schemas.js'

/** The user's channels per category (one row per notification setting; defaults push and email on). */
export async function readPreferences(db: Db, actor: Actor) {
  const [preferences, user] = await Promise.all([
    db
      .selectFrom('notification_settings as s')
      .leftJoin('notification_preferences as p', (j) =>
        j
          .onRef('p.tenant_id', '=', 's.tenant_id')
          .onRef('p.notification_setting_id', '=', 's.id')
          .on('p.user_id', '=', actor.userId),
      )
      .select([
        's.id as notification_setting_id',
        's.key',
        sql<boolean>`coalesce(p.push, true)`.as('push'),
        sql<boolean>`coalesce(p.email, true)`.as('email'),
      ])
      .where('s.tenant_id', '=', actor.tenantId)
      .orderBy('s.sort_number')
      .orderBy('s.id')
      .execute(),
    db
      .selectFrom('users')
      .select('email_digest')
      .where('tenant_id', '=', actor.tenantId)
      .where('id', '=', actor.userId)
      .executeTakeFirstOrThrow(),
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
    (
      await db
        .selectFrom('notification_settings')
        .select('id')
        .where('tenant_id', '=', actor.tenantId)
        .where('id', 'in', changes.length > 0 ? changes.map((c) => c.notification_setting_id) : [0])
        .execute()
    ).map((r) => r.id),
  )
  const problems = new FieldErrorCollector()
  changes.forEach((change, i) => {
    if (!known.has(change.notification_setting_id))
      problems.add(path(i), 'is not a notification setting of this tenant')
  })
  problems.throwIfAny()
  await db.transaction().execute(async (trx) => {
    for (const change of changes) {
      await trx
        .insertInto('notification_preferences')
        .values({
          tenant_id: actor.tenantId,
          user_id: actor.userId,
          notification_setting_id: change.notification_setting_id,
          ...(change.push !== undefined ? { push: change.push } : {}),
          ...(change.email !== undefined ? { email: change.email } : {}),
        })
        .onConflict((oc) =>
          oc.columns(['tenant_id', 'user_id', 'notification_setting_id']).doUpdateSet({
            ...(change.push !== undefined ? { push: change.push } : {}),
            ...(change.email !== undefined ? { email: change.email } : {}),
          }),
        )
        .execute()
    }
    if (digest)
      await trx
        .updateTable('users')
        .set({ email_digest: digest })
        .where('tenant_id', '=', actor.tenantId)
        .where('id', '=', actor.userId)
        .execute()
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
      : await db
          .selectFrom('notification_preferences as p')
          .innerJoin('notification_settings as s', (j) =>
            j.onRef('s.tenant_id', '=', 'p.tenant_id').onRef('s.id', '=', 'p.notification_setting_id'),
          )
          .select(['p.user_id', 'p.push', 'p.email'])
          .where('p.tenant_id', '=', tenantId)
          .where('s.key', '=', categoryOf(notificationType))
          .where('p.user_id', 'in', userIds)
          .execute()
  return {
    push: new Set(rows.filter((r) => !r.push).map((r) => r.user_id)),
    email: new Set(rows.filter((r) => !r.email).map((r) => r.user_id)),
  }
}
