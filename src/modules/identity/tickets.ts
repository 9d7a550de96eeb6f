import { createHash, randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'
import type { AuthTicketKind } from '../../platform/db/schema-identity.js'

const TICKET = /^([1-9][0-9]{0,15})\.([A-Za-z0-9_-]{43})$/

/**
 * Single-use secrets of sign-in flows (reset tokens, MFA tokens, login codes, OIDC states):
 * `<tenant id>.<32 random bytes, base64url>`. Only the SHA-256 is stored; the tenant id routes the
 * lookup to one shard (docs/citus.md) and is covered by the hash.
 */
export function newTicket(tenantId: number): string {
  return `${tenantId}.${randomBytes(32).toString('base64url')}`
}

export const ticketTenant = (ticket: string): number | undefined => {
  const match = TICKET.exec(ticket)
  return match ? Number(match[1]) : undefined
}

export const hashTicket = (ticket: string): Buffer => createHash('sha256').update(ticket).digest()

export interface IssueTicket {
  tenantId: number
  kind: AuthTicketKind
  userId: number | null
  ttlSeconds: number
  data?: Record<string, unknown>
}

/** Stores a new ticket; returns its text (never stored). */
export async function issueTicket(db: Db, ticket: IssueTicket): Promise<string> {
  const text = newTicket(ticket.tenantId)
  await db
    .insertInto('auth_tickets')
    .values({
      tenant_id: ticket.tenantId,
      kind: ticket.kind,
      user_id: ticket.userId,
      token_hash: hashTicket(text),
      data: JSON.stringify(ticket.data ?? {}),
      expires_at: sql<string>`now() + make_interval(secs => ${ticket.ttlSeconds})`,
    })
    .execute()
  return text
}

export interface UsedTicket {
  id: number
  tenantId: number
  userId: number | null
  data: Record<string, unknown>
}

/**
 * Consumes a ticket of `kind`: marks it used in the same statement that finds it, so two requests
 * racing with one ticket cannot both succeed. Undefined when unknown, of another kind, used or expired.
 */
export async function consumeTicket(db: Db, kind: AuthTicketKind, text: string): Promise<UsedTicket | undefined> {
  const tenantId = ticketTenant(text)
  if (tenantId === undefined) return undefined
  const row = await db
    .updateTable('auth_tickets')
    .set({ used_at: sql<string>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('token_hash', '=', hashTicket(text))
    .where('kind', '=', kind)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<string>`now()`)
    .returning(['id', 'tenant_id', 'user_id', 'data'])
    .executeTakeFirst()
  return row && { id: row.id, tenantId: row.tenant_id, userId: row.user_id, data: row.data }
}

/** Looks a live ticket up without consuming it (an MFA token survives a wrong code). */
export async function findTicket(db: Db, kind: AuthTicketKind, text: string): Promise<UsedTicket | undefined> {
  const tenantId = ticketTenant(text)
  if (tenantId === undefined) return undefined
  const row = await db
    .selectFrom('auth_tickets')
    .select(['id', 'tenant_id', 'user_id', 'data'])
    .where('tenant_id', '=', tenantId)
    .where('token_hash', '=', hashTicket(text))
    .where('kind', '=', kind)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<string>`now()`)
    .executeTakeFirst()
  return row && { id: row.id, tenantId: row.tenant_id, userId: row.user_id, data: row.data }
}

/** Marks one ticket used (after a successful check of what came with it). Returns false if it was used meanwhile. */
export async function useTicket(db: Db, tenantId: number, id: number): Promise<boolean> {
  const result = await db
    .updateTable('auth_tickets')
    .set({ used_at: sql<string>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}
