import type { Db } from '../../platform/db/schema.js'
import { defineResource } from '../../platform/query/resource.js'
import { createWriteBehind } from '../../platform/write-behind.js'
import { insertAccesses } from './shared-items.queries.js'
import { groupBy } from '../../platform/group-by.js'

export const ACCESS_OUTCOMES = [
  'redirected',
  'grant_token_issued',
  'resolved_without_redirect',
  'denied',
  'not_found',
] as const
export type AccessOutcome = (typeof ACCESS_OUTCOMES)[number]

export interface SharedItemAccess {
  tenantId: number
  sharedItemId: string
  userId: number | null
  outcome: AccessOutcome
  urlType: string | null
}

const FLUSH_MS = 200
const MAX_BUFFERED = 500

/**
 * The share access log, written off the stable URL's path: accesses are buffered and inserted in one
 * statement per tenant every 200 ms (or at 500), so a resolution never waits for the log. A crash can
 * lose the last 200 ms of entries — acceptable for an access log, not for the audit log.
 */
export function createAccessRecorder(db: Db, onError: (error: unknown) => void = () => undefined) {
  async function write(batch: SharedItemAccess[]): Promise<void> {
    for (const [tenantId, accesses] of groupBy(batch, (access) => access.tenantId))
      await insertAccesses(db, tenantId, accesses)
  }

  const buffer = createWriteBehind({ delayMs: FLUSH_MS, maxBuffered: MAX_BUFFERED, write, onError })
  return {
    record: (access: SharedItemAccess) => buffer.add(access),
    /** Writes what is buffered (tests and shutdown call it; the timer otherwise). */
    flush: () => buffer.flush(),
  }
}
export type AccessRecorder = ReturnType<typeof createAccessRecorder>

export const accessResource = defineResource({
  name: 'shared item access',
  alias: 'sa',
  uniqueKey: 'id',
  defaultSort: ['-id'],
  fields: {
    id: { type: 'id' },
    shared_item_id: { type: 'uuid' },
    user_id: { type: 'id' },
    outcome: { type: 'string' },
    url_type: { type: 'string' },
    created_at: { type: 'timestamp' },
  },
})
