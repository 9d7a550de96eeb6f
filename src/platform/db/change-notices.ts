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

export interface ChangeNotice {
  channel: string
  payload: string
}

/**
 * The notices a transaction that wrote `tables` sends. The payload names the tenant of the request
 * the write belongs to (every request stays within its actor's tenant); a write with no request
 * (a job, the CLI, a login before its actor is known) names none, which clears every tenant.
 */
export function changeNotices(tables: ReadonlySet<string>): ChangeNotice[] {
  for (const table of tables) {
    if (ACTOR_TABLES.has(table)) {
      const tenant = (currentRequest() as { actor?: { tenantId: number } } | undefined)?.actor?.tenantId ?? null
      return [{ channel: ACTOR_CHANGED_CHANNEL, payload: JSON.stringify({ tenant }) }]
    }
  }
  return []
}

/**
 * Whether a write (`verb` on `table`, in statement `text`) can change a cached actor. A new token or
 * user is in no cache yet, so plain inserts into those do not count; an upsert does.
 */
export function isNoticedWrite(verb: string, table: string, text: string): boolean {
  if (!ACTOR_TABLES.has(table)) return false
  return verb !== 'insert' || table === 'department_users' || /\bon\s+conflict\b[\s\S]*\bdo\s+update\b/i.test(text)
}
