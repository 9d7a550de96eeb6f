import type { Actor } from '../../platform/auth/actor.js'
import { requirePermission } from '../../platform/auth/require-permission.js'
import type { Db } from '../../platform/db/schema.js'
import * as queries from './audit.queries.js'

/** The tenant's audit log as a list query's base and context; only for holders of `audit.view`. */
export function auditLogQuery(db: Db, actor: Actor) {
  requirePermission(actor, 'audit.view')
  return { ctx: { db, tenantId: actor.tenantId, actor }, base: queries.selectAuditLog(db, actor.tenantId) }
}
