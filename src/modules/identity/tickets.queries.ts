import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import type { AuthTicketKind } from '../../platform/db/schema-identity.js'

const ticketColumns = ['id', 'tenant_id', 'user_id', 'data'] as const

export function insertTicket(
  db: Db,
  tenantId: number,
  ticket: { kind: AuthTicketKind; userId: number | null; tokenHash: Buffer; data: string; ttlSeconds: number },
) {
  return db
    .insertInto('auth_tickets')
    .values({
      tenant_id: tenantId,
      kind: ticket.kind,
      user_id: ticket.userId,
      token_hash: ticket.tokenHash,
      data: ticket.data,
      expires_at: sql<string>`now() + make_interval(secs => ${ticket.ttlSeconds})`,
    })
    .execute()
}

/** Marks a live ticket used in the statement that finds it (two racing requests cannot both get it). */
export function consumeTicket(db: Db, tenantId: number, kind: AuthTicketKind, tokenHash: Buffer) {
  return db
    .updateTable('auth_tickets')
    .set({ used_at: sql<string>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('token_hash', '=', tokenHash)
    .where('kind', '=', kind)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<string>`now()`)
    .returning(ticketColumns)
    .executeTakeFirst()
}

export function findLiveTicket(db: Db, tenantId: number, kind: AuthTicketKind, tokenHash: Buffer) {
  return db
    .selectFrom('auth_tickets')
    .select(ticketColumns)
    .where('tenant_id', '=', tenantId)
    .where('token_hash', '=', tokenHash)
    .where('kind', '=', kind)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<string>`now()`)
    .executeTakeFirst()
}

/** Whether the ticket was still unused (and is now used). */
export async function markTicketUsed(db: Db, tenantId: number, id: number): Promise<boolean> {
  const result = await db
    .updateTable('auth_tickets')
    .set({ used_at: sql<string>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** Ends every unused ticket of `kind` of a user (other reset links once one was used). */
export function useUpAllTickets(db: Db, tenantId: number, userId: number, kind: AuthTicketKind) {
  return db
    .updateTable('auth_tickets')
    .set({ used_at: sql<string>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('kind', '=', kind)
    .where('used_at', 'is', null)
    .execute()
}

/** Tickets of `kind` a user was issued in the last `seconds`. */
export async function countRecentUserTickets(
  db: Db,
  tenantId: number,
  userId: number,
  kind: AuthTicketKind,
  seconds: number,
): Promise<number> {
  const row = await db
    .selectFrom('auth_tickets')
    .select(sql<number>`count(*)::int`.as('sent'))
    .where('tenant_id', '=', tenantId)
    .where('user_id', '=', userId)
    .where('kind', '=', kind)
    .where(sql<boolean>`created_at > now() - make_interval(secs => ${seconds})`)
    .executeTakeFirstOrThrow()
  return row.sent
}

/** Used and expired tickets (a day after their expiry), across tenants: the prune job. */
export function deleteExpiredTickets(db: Db) {
  return db
    .deleteFrom('auth_tickets')
    .where(sql<boolean>`expires_at < now() - interval '1 day'`)
    .execute()
}
