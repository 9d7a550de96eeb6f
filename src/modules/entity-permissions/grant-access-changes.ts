import type { Db } from '../../platform/db/schema.js'
import { type AccessScope, recordSyncWrites } from '../../platform/sync/change-log.js'
import * as queries from './entity-permissions.queries.js'

/** A grant as this module stores it. */
export interface GrantFacts {
  key: string
  permission_entity: string
  permission_entity_id: number
  target_entity: string
  target_entity_id: string | number
}

/**
 * Records whose view some `view` grants created or deleted (in the caller's transaction) may change
 * (issue 43). A grant narrows only a target that carries view grants besides it: then only its
 * grantee gains or loses. The first grants on a target (it was open to everyone) and the removal of
 * the last one (it becomes open to everyone) change every user's view: the tenant's scope.
 */
export async function recordGrantAccessChanges(
  trx: Db,
  tenantId: number,
  kind: 'created' | 'deleted',
  grants: GrantFacts[],
): Promise<void> {
  const byTarget = new Map<string, GrantFacts[]>()
  for (const grant of grants) {
    if (grant.key !== 'view') continue
    const target = `${grant.target_entity}\u0000${String(grant.target_entity_id)}`
    byTarget.set(target, [...(byTarget.get(target) ?? []), grant])
  }
  const scopes: AccessScope[] = []
  for (const targetGrants of byTarget.values()) {
    const { target_entity: entity, target_entity_id: id } = targetGrants[0]!
    const remaining = await queries.countViewGrantsOnTarget(trx, tenantId, entity, String(id))
    const opened = kind === 'deleted' && remaining === 0
    const firstRestriction = kind === 'created' && remaining === targetGrants.length
    if (opened || firstRestriction) {
      scopes.splice(0, scopes.length, { scope: 'tenant' })
      break
    }
    for (const grant of targetGrants) {
      if (
        grant.permission_entity === 'user' ||
        grant.permission_entity === 'role' ||
        grant.permission_entity === 'department'
      )
        scopes.push({ scope: grant.permission_entity, id: Number(grant.permission_entity_id) })
    }
  }
  await recordSyncWrites(trx, tenantId, { access: scopes })
}
