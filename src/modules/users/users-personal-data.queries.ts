import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import type { ErasedPerson } from './users-personal-data.js'

/** The erasure's statements (users-personal-data.ts): each deletes what one table holds about the person. */

/** The person's inbox. */
export async function deleteNotificationsOf(db: Db, person: ErasedPerson): Promise<void> {
  await db
    .deleteFrom('notifications')
    .where('tenant_id', '=', person.tenantId)
    .where('notifiable_type', '=', 'user')
    .where('notifiable_id', '=', person.userId)
    .execute()
}

/** The person's mail, and any other message sent to their address. */
export async function deleteOutboundMessagesOf(db: Db, person: ErasedPerson): Promise<void> {
  await db
    .deleteFrom('outbound_messages')
    .where('tenant_id', '=', person.tenantId)
    .where((eb) =>
      person.email
        ? eb.or([eb('user_id', '=', person.userId), eb(sql`lower(recipient)`, '=', person.email.toLowerCase())])
        : eb('user_id', '=', person.userId),
    )
    .execute()
}

/** Password reset requests from the addresses the person was seen at (read before their sessions are deleted). */
export async function deletePasswordResetRequestsSeenWith(db: Db, person: ErasedPerson): Promise<void> {
  await sql`delete from password_reset_requests
    where tenant_id = ${person.tenantId} and ip in (
      select ip from session_activity where tenant_id = ${person.tenantId} and user_id = ${person.userId} and ip is not null
      union select ip from audit_log where tenant_id = ${person.tenantId} and actor_id = ${person.userId} and ip is not null)`.execute(
    db,
  )
}

/** The deliveries to the person's push subscriptions (read before the subscriptions are deleted). */
export async function deletePushDeliveriesOf(db: Db, person: ErasedPerson): Promise<void> {
  await sql`delete from push_deliveries where tenant_id = ${person.tenantId} and subscription_id in (
    select id from push_subscriptions where tenant_id = ${person.tenantId} and user_id = ${person.userId})`.execute(db)
}

/** The rows of a tenant table whose `column` is the person's id (a `deleteBy` rule). */
export async function deleteRowsOf(
  db: Db,
  tenantId: number,
  table: string,
  column: string,
  userId: number,
): Promise<void> {
  await sql`delete from ${sql.table(table)} where tenant_id = ${tenantId} and ${sql.ref(column)} = ${userId}`.execute(
    db,
  )
}

/** Every column of schema `public` with its type (as information_schema names it). */
export async function selectPublicColumns(db: Db): Promise<Array<{ table: string; column: string; type: string }>> {
  const { rows } = await sql<{ table: string; column: string; type: string }>`
    select table_name as table, column_name as column, data_type as type
    from information_schema.columns where table_schema = 'public' order by 1, 2`.execute(db)
  return rows
}
