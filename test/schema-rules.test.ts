import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { schemaRuleViolations } from '../src/platform/db/schema-rules.js'
import { closeTestDb, testDb } from './helpers/test-database.js'

after(closeTestDb)

// docs/citus.md: what Citus needs to distribute every tenant table by tenant_id
test('the migrated schema follows the rules of distribution by tenant', async () => {
  assert.deepEqual(await schemaRuleViolations(testDb()), [])
})
