import { createHash, randomBytes } from 'node:crypto'
import type { Db } from '../../platform/db/schema.js'
import type { AuthTicketKind } from '../../platform/db/schema-identity.js'
import * as queries from './tickets.queries.js'

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
  await queries.insertTicket(db, ticket.tenantId, {
    kind: ticket.kind,
    userId: ticket.userId,
    tokenHash: hashTicket(text),
    data: JSON.stringify(ticket.data ?? {}),
    ttlSeconds: ticket.ttlSeconds,
  })
  return text
}

export interface UsedTicket {
  id: number
  tenantId: number
  userId: number | null
  data: Record<string, unknown>
}

const usedTicket = (row: { id: number; tenant_id: number; user_id: number | null; data: Record<string, unknown> }) => ({
  id: row.id,
  tenantId: row.tenant_id,
  userId: row.user_id,
  data: row.data,
})

/**
 * Consumes a ticket of `kind`: marks it used in the same statement that finds it, so two requests
 * racing with one ticket cannot both succeed. Undefined when unknown, of another kind, used or expired.
 */
export async function consumeTicket(db: Db, kind: AuthTicketKind, text: string): Promise<UsedTicket | undefined> {
  const tenantId = ticketTenant(text)
  if (tenantId === undefined) return undefined
  const row = await queries.consumeTicket(db, tenantId, kind, hashTicket(text))
  return row && usedTicket(row)
}

/** Looks a live ticket up without consuming it (an MFA token survives a wrong code). */
export async function findTicket(db: Db, kind: AuthTicketKind, text: string): Promise<UsedTicket | undefined> {
  const tenantId = ticketTenant(text)
  if (tenantId === undefined) return undefined
  const row = await queries.findLiveTicket(db, tenantId, kind, hashTicket(text))
  return row && usedTicket(row)
}

/** Marks one ticket used (after a successful check of what came with it). Returns false if it was used meanwhile. */
export function useTicket(db: Db, tenantId: number, id: number): Promise<boolean> {
  return queries.markTicketUsed(db, tenantId, id)
}
