// scratch (not committed): seed a quick database and print the scenario requests
import fs from 'node:fs'
import { openDatabase } from '../src/platform/db/database.js'
import { ensureDatabase } from '../src/platform/db/embedded-postgres.js'
import { migrateToLatest } from '../src/platform/db/migrate.js'
import { BULK_TABLES, deferSecondaryIndexes, seedTenant } from './seed.js'
import { scenarios } from './scenarios.js'
const url = process.env.DATABASE_URL!
await ensureDatabase(url, new URL(url).pathname.slice(1))
const handle = await openDatabase({ url, dataDir: '' })
await migrateToLatest(handle.db, handle.pool)
const rebuild = await deferSecondaryIndexes(handle.db, BULK_TABLES)
const big = await seedTenant(handle.db, 'big', Number(process.env.SCALE ?? 0.01))
await seedTenant(handle.db, 'big-two', Number(process.env.SCALE ?? 0.01))
await rebuild()
const out: Record<string, unknown> = {}
for (const s of scenarios) out[s.id] = { api: await s.request(big, handle.db), base: await s.baseline(big, handle.db) }
fs.writeFileSync('/tmp/dev/requests.json', JSON.stringify(out, null, 1))
await handle.db.destroy()
