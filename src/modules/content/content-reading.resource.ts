import { sql } from 'kysely'
import { Type } from 'typebox'
import { Nullable, TimestampSchema } from '../../platform/http/schemas.js'
import type { QueryContext, RelationDef, WordFilter } from '../../platform/query/resource.js'
import type { Principal } from './content-declaration.js'
import type { ReadingDeclaration } from './content-reading.js'
import { confirmationFilterSql, publishedOrEditorSql } from './content-reading.queries.js'

// What a reading content adds to its resource (docs/content-reading.md): the reader's own state
// (`my_state`, a relation read with the page), `filter[confirmation]`, the editors-only drafts, pinned first.

/** The reader's own state of a record (`my_state`). */
export const MyStateSchema = Type.Object(
  { seen_at: Nullable(TimestampSchema), confirmed_at: Nullable(TimestampSchema) },
  { $id: 'ReadingState' },
)

const timestampOrNull = (value: unknown) => (typeof value === 'string' ? value : null)
const stateOf = (read: { seen_at?: unknown; confirmed_at?: unknown } | undefined) => ({
  seen_at: timestampOrNull(read?.seen_at),
  confirmed_at: timestampOrNull(read?.confirmed_at),
})

/** The declaration parts a reading content adds to `defineContent` (view rule, `my_state`, filters, pinned first). */
export function readingContentParts(r: ReadingDeclaration) {
  const myState: RelationDef = {
    key: 'id',
    many: false,
    async load(ctx: QueryContext, keys: unknown[]) {
      const userId = ctx.actor?.userId ?? 0
      const { rows } = await sql<{ target_id: number; seen_at: string | null; confirmed_at: string | null }>`
        select target_id, seen_at, confirmed_at from content_reads
        where tenant_id = ${ctx.tenantId} and target_type = ${r.alias} and user_id = ${userId}
          and target_id = any(${keys.map(Number)}::bigint[])`.execute(ctx.db)
      const found = new Map(rows.map((row) => [Number(row.target_id), row]))
      return new Map(keys.map((key) => [key, stateOf(found.get(Number(key)))]))
    },
    // read with the page (a primary-key probe per row and column): a list is one statement, not two
    inline: {
      columns(ctx) {
        const userId = ctx.actor?.userId
        if (userId === undefined) return undefined
        const read = (column: 'seen_at' | 'confirmed_at') =>
          sql`(select cr.${sql.ref(column)} from content_reads cr where cr.tenant_id = ${ctx.tenantId}
            and cr.target_type = ${r.alias} and cr.target_id = c.id and cr.user_id = ${userId})`
        return { seen_at: read('seen_at'), confirmed_at: read('confirmed_at') }
      },
      assemble: stateOf,
    },
  }
  /** `filter[confirmation]=pending|confirmed`: published records asking for a confirmation, by the reader's own state. */
  const confirmation: WordFilter = {
    words: ['pending', 'confirmed'],
    sql: (word, ctx) => confirmationFilterSql(ctx.tenantId, r.alias, ctx.actor?.userId ?? 0, word),
  }
  return {
    /** Drafts (no `published_at`) and scheduled records are visible only to editors (`<module>.manage`). */
    viewRule: (p: Principal, alias: string) => publishedOrEditorSql(p, alias, r.module),
    relations: { my_state: myState },
    defaultRelations: ['my_state'],
    outputs: { my_state: MyStateSchema },
    customFilters: { confirmation },
    defaultSort: ['-pinned', '-id'],
    fields: {
      published_at: { type: 'timestamp' },
      pinned: { type: 'boolean' },
      comments_enabled: { type: 'boolean' },
      requires_reading_confirmation: { type: 'boolean' },
      confirmation_due_at: { type: 'timestamp' },
    },
  } as const
}
