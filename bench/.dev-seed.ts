import fs from 'node:fs/promises'
import { openDatabase } from '../src/platform/db/database.js'
import { ensureDatabase } from '../src/platform/db/embedded-postgres.js'
import { migrateToLatest } from '../src/platform/db/migrate.js'
import { BULK_TABLES, deferSecondaryIndexes, seedTenant } from './seed.js'
import { scenarios } from './scenarios.js'
const url = 'postgres://postgres@127.0.0.1:5432/wp_dev'
await ensureDatabase(url, 'wp_dev')
const handle = await openDatabase({ url, dataDir: '' })
await migrateToLatest(handle.db, handle.pool)
const rebuild = await deferSecondaryIndexes(handle.db, BULK_TABLES)
const t = await seedTenant(handle.db, 'big', Number(process.env.SCALE ?? 0.01))
await rebuild()
const reqs: Record<string, unknown> = {}
for (const s of scenarios) reqs[s.id] = { api: await s.request(t, handle.db), base: await s.baseline(t, handle.db) }
await fs.writeFile('/work/dev/scenarios.json', JSON.stringify({ tenant: t, reqs }, null, 2))
await handle.close()
