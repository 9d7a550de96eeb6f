import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../../platform/db/schema.js'

/** The tenant's audit log (alias `l`), the base of the list and CSV queries. */
export const selectAuditLog = (db: Db, tenantId: number) =>
  db.selectFrom('audit_log as l').where('l.tenant_id', '=', tenantId)

/** SQL: whether the recorded event's type is one of `types` (the audit subscriber's probe). */
export const eventTypeIn = (type: RawBuilder<unknown>, types: readonly string[]) =>
  sql<boolean>`${type} = any(${types}::text[])`
