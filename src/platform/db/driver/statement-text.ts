import { createHash } from 'node:crypto'
import { isNoticedWrite } from '../change-notices.js'

const MAX_NAMED_STATEMENTS = 2000

const WRITE =
  /\b(insert\s+into|update|delete\s+from|merge\s+into|truncate(?:\s+table)?)\s+(?:only\s+)?"?([a-z_][a-z0-9_]*)"?/gi

/** What the driver knows of one distinct SQL text (one Map lookup per query: hashing a long text is not free). */
export interface StatementInfo {
  name?: string
  transaction?: 'begin' | 'commit' | 'rollback'
  writes: ReadonlySet<string>
  /** The written tables whose change other processes must hear of (db/change-notices.ts). */
  noticed: ReadonlySet<string>
}
const statements = new Map<string, StatementInfo>()

/**
 * Kysely sends every query unnamed, so PostgreSQL plans it anew each time; for the joins of the hot
 * paths (token → actor, access rules) planning costs several times the execution (measured 1.2 ms vs
 * 0.17 ms for the auth lookup). Naming each distinct SQL text makes node-postgres prepare it once per
 * connection and reuse it. Distinct texts are bounded: past the cap, new texts run unnamed.
 * Also noted: what the text does to transactions, and which tables it writes (`onCommittedWrites`).
 */
export function statementInfo(text: string): StatementInfo {
  const known = statements.get(text)
  if (known) return known
  const head = text.trimStart().slice(0, 20).toLowerCase()
  const transaction = /^(begin|start transaction)\b/.test(head)
    ? 'begin'
    : /^(commit|end)\b/.test(head)
      ? 'commit'
      : /^rollback\b(?!\s+to)/.test(head)
        ? 'rollback'
        : undefined
  const matches = Array.from(
    text.matchAll(WRITE),
    (m) => [m[1].split(/\s/)[0].toLowerCase(), m[2].toLowerCase()] as const,
  )
  const writes = new Set(matches.map(([, table]) => table))
  const noticed = new Set(
    matches.filter(([verb, table]) => isNoticedWrite(verb, table, text)).map(([, table]) => table),
  )
  if (statements.size >= MAX_NAMED_STATEMENTS) return { transaction, writes, noticed }
  const info: StatementInfo = {
    name: `k${createHash('sha1').update(text).digest('base64url')}`,
    transaction,
    writes,
    noticed,
  }
  statements.set(text, info)
  return info
}
