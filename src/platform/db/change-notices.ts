import { AsyncLocalStorage } from 'node:async_hooks'
import { currentRequest } from '../audit/request-context.js'

/**
 * Cross-process cache invalidation, sent by the app in the changing transaction (not by triggers:
 * on Citus a trigger runs on the worker that holds the shard, and its NOTIFY never reaches the
 * coordinator's listeners). The driver (driver/named-statements.ts) adds `pg_notify` right before the COMMIT of a
 * transaction that wrote a watched table, so the notice is delivered exactly when the change is
 * visible and never for a rollback. Writes that bypass the app's pool (psql, another program) send
 * nothing: they must notify by hand (docs/deployment.md).
 */
export const ACTOR_CHANGED_CHANNEL = 'actor_changed'

/** The tables an actor is made of: a committed write to any of them invalidates cached actors. */
export const ACTOR_TABLES: ReadonlySet<string> = new Set(['access_tokens', 'users', 'roles', 'department_users'])

/**
 * The change feed (`GET /api/sync`, docs/sync.md): a committed write to any table its entities' data
 * or visibility read bumps the tenant's `sync_clocks.seq` in the same transaction (right before the
 * COMMIT, as the notices above) and sends `{tenant}` on this channel, which wakes long polls on every node.
 */
export const SYNC_CHANNEL = 'sync_changed'

/** What the synced entities (notifications, folders, the content resources) and their access rule read. */
export const SYNC_TABLES: ReadonlySet<string> = new Set([
  // the entities and the data their presenters add
  'notifications',
  'folders',
  'folder_translations',
  'infoboard_posts',
  'infoboard_comments',
  'manual_chapters',
  'manual_entries',
  'content_reads',
  'calendar_events',
  'forms',
  'filemanager_directories',
  'filemanager_files',
  'task_executions',
  // the access rule: grants, roles' permissions, departments, users (deactivation, role, language)
  'entity_permissions',
  'roles',
  'users',
  'departments',
  'department_users',
  'tenants',
])

export interface ChangeNotice {
  channel: string
  payload: string
}

/** The tenant a write without an HTTP request (a job) belongs to, when its runner knows it. */
const writeTenants = new AsyncLocalStorage<number>()
let scopedRuns = 0

/**
 * Runs `work` (a job) with its writes attributed to `tenantId`: the change feed then bumps that
 * tenant's clock only. Like the request context, the storage is on only while such a run is in flight.
 */
export async function runForTenant<T>(tenantId: number, work: () => Promise<T>): Promise<T> {
  scopedRuns++
  try {
    return await writeTenants.run(tenantId, work)
  } finally {
    if (--scopedRuns === 0) writeTenants.disable()
  }
}

/** The tenant of the current write: the request's actor's, or the scoped job's; undefined when unknown. */
export function writeTenant(): number | undefined {
  const actor = (currentRequest() as { actor?: { tenantId: number } } | undefined)?.actor
  return actor?.tenantId ?? writeTenants.getStore()
}

/**
 * The notices a transaction that wrote `tables` sends. The payload names the tenant of the request
 * the write belongs to (every request stays within its actor's tenant); a write with no request
 * (a job, the CLI, a login before its actor is known) names none, which clears every tenant.
 */
export function changeNotices(tables: ReadonlySet<string>): ChangeNotice[] {
  const notices: ChangeNotice[] = []
  const tenant = () => JSON.stringify({ tenant: writeTenant() ?? null })
  for (const table of tables) {
    if (ACTOR_TABLES.has(table)) {
      notices.push({ channel: ACTOR_CHANGED_CHANNEL, payload: tenant() })
      break
    }
  }
  for (const table of tables) {
    if (SYNC_TABLES.has(table)) {
      notices.push({ channel: SYNC_CHANNEL, payload: tenant() })
      break
    }
  }
  return notices
}

/** Whether `tables` holds a table of the change feed (its clock must be bumped before the COMMIT). */
export function touchesSync(tables: ReadonlySet<string>): boolean {
  for (const table of tables) if (SYNC_TABLES.has(table)) return true
  return false
}

/**
 * Whether a write (`verb` on `table`, in statement `text`) can change a cached actor or the synced
 * view. A new token or user is in no cache yet, so plain inserts into those do not count for actors;
 * an upsert does. Every write to a table of the feed counts.
 */
export function isNoticedWrite(verb: string, table: string, text: string): boolean {
  if (SYNC_TABLES.has(table)) return true
  if (!ACTOR_TABLES.has(table)) return false
  return verb !== 'insert' || table === 'department_users' || /\bon\s+conflict\b[\s\S]*\bdo\s+update\b/i.test(text)
}
