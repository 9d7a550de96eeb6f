import { sql } from 'kysely'
import type { Db } from '../db/schema.js'
import type { Readable } from 'node:stream'
import type { RawListQuery } from '../query/parse-query.js'
import type { SyncReadPage, SyncRecord } from './sync-source.js'

/**
 * A sync page as a list query of the entity's own resource: named ids, or the next ids after
 * `after` in id order. Always limited, so the list answers an array (never a stream).
 */
export function pageQuery(page: SyncReadPage): RawListQuery {
  if ('ids' in page) return { filter: { id: { in: page.ids.join(',') } }, sort: 'id', limit: page.ids.length }
  return { ...(page.after === null ? {} : { filter: { id: { gt: page.after } } }), sort: 'id', limit: page.limit }
}

/** The rows of a limited list (a limited list never streams). */
export function pageRows(list: Readable | Record<string, unknown>[]): SyncRecord[] {
  if (!Array.isArray(list)) throw new Error('a limited list answered a stream')
  return list
}

/** The ids among `ids` of rows of `table` in the tenant (every synced table has `tenant_id` and `id`). */
export async function existingIdsIn(db: Db, table: string, tenantId: number, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const { rows } = await sql<{ id: number }>`select id from ${sql.table(table)}
    where tenant_id = ${tenantId} and id = any(${ids.map(Number)}::bigint[])`.execute(db)
  return new Set(rows.map((row) => String(row.id)))
}
