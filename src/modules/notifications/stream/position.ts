import { invalidField } from '../../../platform/http/errors.js'

/**
 * Where a notification stream stands, sent as each event's SSE `id` and given back by a reconnecting
 * client as `Last-Event-ID`, so that another node can replay exactly what the client missed.
 *
 * Notification ids are random and `created_at` is the inserting transaction's start, so neither orders
 * records by commit: a record may become visible after a younger one was delivered. The position is
 * therefore a watermark plus what was delivered above it: every record created before `watermark`
 * (whole seconds since the epoch) was delivered, and of the younger ones exactly `delivered` were.
 * The watermark trails the newest delivered record by `SETTLE_SECONDS`, longer than any transaction
 * that inserts notifications runs, so a late commit still lands above it.
 */
export const SETTLE_SECONDS = 30
/** Beyond this many records above the watermark, it moves up to the oldest one kept (a burst to one user). */
const MAX_DELIVERED = 64

export interface StreamPosition {
  watermark: number
  /** id → created_at (whole seconds) of the records delivered at or above the watermark. */
  delivered: Map<string, number>
}

const UUID_HEX = /^[0-9a-f]{32}$/

/** `<watermark>[.<uuid hex>…]`; compact because the browser stores and resends it. */
export function formatPosition(position: StreamPosition): string {
  return [String(position.watermark), ...Array.from(position.delivered.keys(), (id) => id.replaceAll('-', ''))].join(
    '.',
  )
}

/** Parses a Last-Event-ID header; 422 on anything this server did not send. */
export function parsePosition(header: string): Omit<StreamPosition, 'delivered'> & { delivered: string[] } {
  const [watermarkText, ...ids] = header.trim().split('.')
  const watermark = Number(watermarkText)
  if (!/^\d{1,12}$/.test(watermarkText) || ids.length > MAX_DELIVERED || !ids.every((id) => UUID_HEX.test(id))) {
    throw invalidField('Last-Event-ID', 'must be an event id sent by this stream')
  }
  const uuid = (hex: string) =>
    `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
  return { watermark, delivered: ids.map(uuid) }
}

/** The `YYYY-MM-DD HH:MM:SS` (UTC) of a presented record, in whole seconds since the epoch. */
export function createdSeconds(createdAt: unknown): number {
  return Math.floor(Date.parse(`${String(createdAt).replace(' ', 'T')}Z`) / 1000)
}

/** Records one delivered record and moves the watermark up as far as is safe. */
export function advancePosition(position: StreamPosition, id: string, createdAt: number): void {
  position.delivered.set(id, createdAt)
  const newest = Math.max(...position.delivered.values())
  let watermark = Math.max(position.watermark, newest - SETTLE_SECONDS)
  if (position.delivered.size > MAX_DELIVERED) {
    const kept = [...position.delivered.values()].sort((a, b) => b - a)
    watermark = Math.max(watermark, kept[MAX_DELIVERED - 1])
    // many in one second: past it (a reconnect could then miss a late commit of that second)
    if (kept.filter((created) => created >= watermark).length > MAX_DELIVERED) watermark += 1
  }
  position.watermark = watermark
  for (const [deliveredId, created] of position.delivered)
    if (created < watermark) position.delivered.delete(deliveredId)
}
