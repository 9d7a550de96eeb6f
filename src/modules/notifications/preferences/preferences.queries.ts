import { sql } from 'kysely'
import type { Db } from '../../../platform/db/schema.js'
import type { PreferenceChange } from '../push/push.schemas.js'

/** The user's channels per notification setting of the tenant (defaults push and email on). */
export function selectPreferences(db: Db, tenantId: number, userId: number) {
  return db
    .selectFrom('notification_settings as s')
    .leftJoin('notification_preferences as p', (j) =>
      j
        .onRef('p.tenant_id', '=', 's.tenant_id')
        .onRef('p.notification_setting_id', '=', 's.id')
        .on('p.user_id', '=', userId),
    )
    .select([
      's.id as notification_setting_id',
      's.key',
      sql<boolean>`coalesce(p.push, true)`.as('push'),
      sql<boolean>`coalesce(p.email, true)`.as('email'),
    ])
    .where('s.tenant_id', '=', tenantId)
    .orderBy('s.sort_number')
    .orderBy('s.id')
    .execute()
}

export function findEmailDigest(db: Db, tenantId: number, userId: number) {
  return db
    .selectFrom('users')
    .select('email_digest')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .executeTakeFirstOrThrow()
}

/** The ids among `ids` that are notification settings of the tenant. */
export async function selectSettingIdsAmong(db: Db, tenantId: number, ids: number[]) {
  const rows = await db
    .selectFrom('notification_settings')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', ids.length > 0 ? ids : [0])
    .execute()
  return rows.map((r) => r.id)
}

/** Sets the channels a change names of one setting for the user (the others as they were, or default). */
export async function upsertPreference(db: Db, tenantId: number, userId: number, change: PreferenceChange) {
  await db
    .insertInto('notification_preferences')
    .values({
      tenant_id: tenantId,
      user_id: userId,
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

export async function updateEmailDigest(
  db: Db,
  tenantId: number,
  userId: number,
  digest: 'immediate' | 'daily' | 'weekly',
) {
  await db
    .updateTable('users')
    .set({ email_digest: digest })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .execute()
}

/** The users' own channel choices for one category (users without a row chose nothing). */
export function selectCategoryPreferences(db: Db, tenantId: number, category: string, userIds: number[]) {
  return db
    .selectFrom('notification_preferences as p')
    .innerJoin('notification_settings as s', (j) =>
      j.onRef('s.tenant_id', '=', 'p.tenant_id').onRef('s.id', '=', 'p.notification_setting_id'),
    )
    .select(['p.user_id', 'p.push', 'p.email'])
    .where('p.tenant_id', '=', tenantId)
    .where('s.key', '=', category)
    .where('p.user_id', 'in', userIds)
    .execute()
}
