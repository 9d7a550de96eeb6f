import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'
import { userResource } from './index.js'
import type { Db } from '../../platform/db/schema.js'
import { applyFilters } from '../../platform/query/apply-query.js'
import { parseListQuery } from '../../platform/query/parse-query.js'
import { skipOnCitus } from '../../../test/helpers/citus.js'

const db = testDb()

/**
 * The plan of the list query of `GET /api/users?filter[text]=…`, explained inside `trx`, for a caller
 * who may read extended fields (`readsDetails`) or not: the platform's text search over the readable fields.
 */
async function explainTextSearch(trx: Db, tenantId: number, text: string, readsDetails = true): Promise<string> {
  const ctx = { db: trx, tenantId, flags: { extendedFields: false, readsDetails } }
  const parsed = parseListQuery(userResource, { filter: { text } }, ctx)
  const query = trx
    .selectFrom('users as u')
    .select(['u.id'])
    .where('u.tenant_id', '=', tenantId)
    .where('u.deleted_at', 'is', null)
  const rows = await applyFilters(query, userResource, parsed, ctx).explain()
  return rows.map((r) => String(r['QUERY PLAN'])).join('\n')
}

class Rollback extends Error {
  constructor(readonly plan: string) {
    super('rollback')
  }
}

for (const [index, readsDetails, term] of [
  ['users_search_trgm', true, 'e'],
  ['users_basic_search_trgm', false, 'f'],
] as const)
  test(
    `filter[text] is served by the trigram index ${index} on a tenant of 10,000 users (${readsDetails ? 'caller reads email' : 'basic fields only'})`,
    {
      skip: skipOnCitus(
        "it reads a single node's EXPLAIN; on Citus the plan is the shard's, with the shard's statistics (a sequential scan of a small shard)",
      ),
    },
    async () => {
      const tenant = await given.tenant(db)

      const plan = await db
        .transaction()
        .execute(async (trx) => {
          // varied names, as real ones are: md5 pieces rather than one repeated prefix
          await sql`insert into users (tenant_id, username, password_hash, first_name, last_name, role_id, email, staff_number)
      select ${tenant.id}, 'u' || md5(g::text), 'x', substr(md5('f' || g), 1, 8), substr(md5('l' || g), 1, 10), ${tenant.employeeRoleId},
             substr(md5('e' || g), 1, 12) || '@example.com', 'S' || g
      from generate_series(1, 10000) g`.execute(trx)
          // fresh rows sit in the GIN pending list until (auto)vacuum merges them; merge now, as production would
          await sql`select gin_clean_pending_list(${index}::regclass)`.execute(trx)
          await sql`analyze users`.execute(trx)
          // the bulk rows are rolled back: only the plan leaves the transaction
          throw new Rollback(
            await explainTextSearch(
              trx,
              tenant.id,
              (await sql<{ name: string }>`select substr(md5(${term} || 4242), 1, 8) as name`.execute(trx)).rows[0]
                .name,
              readsDetails,
            ),
          )
        })
        .then(
          () => '',
          (error) => (error instanceof Rollback ? error.plan : Promise.reject(error)),
        )

      assert.match(plan, new RegExp(`Bitmap Index Scan on ${index}\\b`), plan)
      assert.doesNotMatch(plan, /users_tenant_idx/, plan)
    },
  )
