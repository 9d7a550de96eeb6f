// Prints the OpenAPI document the server serves at /api/openapi.json, without a database or a port
// (`npm run openapi:lint` lints it; a typed client can be generated from it).
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { createPool, kyselyOn } from '../src/platform/db/database.js'

const config = loadConfig({ AUTH_CACHE: 'false', LOG_LEVEL: 'silent', BASE_URL: 'http://127.0.0.1:3000' })
// a pool that is never used: building the app queries nothing
const db = kyselyOn(createPool('postgres://unused@127.0.0.1:1/unused', { allowExitOnIdle: true }))
const app = await buildApp({ config, db })
const res = await app.inject({ method: 'GET', url: '/api/openapi.json' })
if (res.statusCode !== 200) throw new Error(`openapi.json answered ${res.statusCode}: ${res.body}`)
process.stdout.write(JSON.stringify(res.json(), null, 2) + '\n')
await app.close()
await db.destroy()
