/**
 * Issue 35: SCIM provisioning at scale, against the seeded tenant of 100,000 users (the quick seed: 1,000).
 * - `POST /scim/v2/Users` (a new userName per request: autocannon's `[<id>]` replacement) and a filtered
 *   `GET /scim/v2/Users?filter=userName eq "…"` (the probe Entra ID sends before every create): requests
 *   per second at 50 connections, p50/p99, no error.
 * - The provisioning cycle: 5,000 users created, then 5,000 PATCHes (Entra ID's form) at 25 concurrent
 *   requests, within the budget (quick: 1/100).
 */
import type { Db } from '../src/platform/db/schema.js'
import { createScimToken } from '../src/modules/scim/index.js'
import type { SeededTenant } from './seed.js'
import { errorMessage } from './wait.js'
import type { Load } from './load.js'

type Row = Record<string, unknown>

export interface ScimBenchContext {
  db: Db
  apiUrl: string
  tenant: SeededTenant
  scale: number
  seconds: number
  load: Load
}

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User'
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'
const CYCLE_USERS = 5_000
const CYCLE_BUDGET_MS = 120_000
const CONCURRENCY = 25

const userBody = (userName: string) =>
  JSON.stringify({
    schemas: [USER],
    userName,
    name: { givenName: 'Bench', familyName: 'Scim' },
    emails: [{ value: `${userName}@example.com`, type: 'work', primary: true }],
    active: true,
  })

/** Runs `work` for 0…n-1, `CONCURRENCY` at a time; the number of failures. */
async function pool(n: number, work: (i: number) => Promise<boolean>): Promise<number> {
  let next = 0
  let failed = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const i = next++
        if (!(await work(i).catch(() => false))) failed++
      }
    }),
  )
  return failed
}

export async function measureScim(ctx: ScimBenchContext): Promise<Row[]> {
  const rows: Row[] = []
  let token: string
  try {
    token = (await createScimToken(ctx.db, ctx.tenant.tenantId, null, { name: 'bench' })).token
  } catch (error) {
    return [{ id: 'scim', request: 'SCIM token', pass: false, error: errorMessage(error) }]
  }
  const headers = { authorization: `Bearer ${token}` }
  const users = ctx.tenant.counts.users ?? 0
  const probeName = `user${Math.max(1, Math.floor(users / 2))}`

  const filterUrl = `${ctx.apiUrl}/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${probeName}"`)}`
  const probe = await fetch(filterUrl, { headers })
  const found = probe.ok ? ((await probe.json()) as { totalResults?: number }).totalResults : undefined
  const get = await ctx.load(filterUrl, { headers, seconds: ctx.seconds })
  rows.push({
    id: 'scim-get-filter',
    request: `GET /scim/v2/Users?filter=userName eq "${probeName}" (${users} users)`,
    rows: found,
    rps: Math.round(get.rps),
    p50: get.p50,
    p99: get.p99,
    errors: get.errors + get.non2xx,
    pass: found === 1 && get.errors + get.non2xx === 0,
  })
  console.log(
    `scim-get   ${Math.round(get.rps)} req/s  p50 ${get.p50} ms  p99 ${get.p99} ms  errors ${get.errors + get.non2xx}`,
  )

  const post = await ctx.load(`${ctx.apiUrl}/scim/v2/Users`, {
    method: 'POST',
    body: userBody('bench-[<id>]'),
    headers,
    seconds: ctx.seconds,
    idReplacement: true,
  })
  rows.push({
    id: 'scim-post',
    request: 'POST /scim/v2/Users (a new userName each)',
    rps: Math.round(post.rps),
    p50: post.p50,
    p99: post.p99,
    errors: post.errors + post.non2xx,
    pass: post.errors + post.non2xx === 0,
  })
  console.log(
    `scim-post  ${Math.round(post.rps)} req/s  p50 ${post.p50} ms  p99 ${post.p99} ms  errors ${post.errors + post.non2xx}`,
  )

  // the provisioning cycle, as an identity provider runs it: creates, then a PATCH of each
  const n = Math.max(10, Math.round(CYCLE_USERS * ctx.scale))
  const budget = Math.max(5_000, Math.round(CYCLE_BUDGET_MS * ctx.scale))
  const ids: string[] = []
  const started = Date.now()
  const createFailures = await pool(n, async (i) => {
    const res = await fetch(`${ctx.apiUrl}/scim/v2/Users`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/scim+json' },
      body: userBody(`cycle-${i}`),
    })
    if (res.status !== 201) return false
    ids[i] = ((await res.json()) as { id: string }).id
    return true
  })
  const createdMs = Date.now() - started
  const patchFailures = await pool(n, async (i) => {
    if (!ids[i]) return false
    const res = await fetch(`${ctx.apiUrl}/scim/v2/Users/${ids[i]}`, {
      method: 'PATCH',
      headers: { ...headers, 'content-type': 'application/scim+json' },
      body: JSON.stringify({
        schemas: [PATCH_OP],
        Operations: [
          { op: 'Replace', path: 'name.familyName', value: `Patched${i}` },
          { op: 'Replace', path: 'active', value: 'False' },
        ],
      }),
    })
    await res.arrayBuffer()
    return res.status === 200
  })
  const totalMs = Date.now() - started
  rows.push({
    id: 'scim-cycle',
    request: `${n} POST /Users then ${n} PATCH /Users/{id}, ${CONCURRENCY} at a time (creates ${createdMs} ms)`,
    ms: totalMs,
    errors: createFailures + patchFailures,
    target: `< ${budget} ms`,
    pass: createFailures + patchFailures === 0 && totalMs < budget,
  })
  console.log(
    `scim-cycle ${n}+${n} in ${totalMs} ms (creates ${createdMs} ms), failures ${createFailures + patchFailures}`,
  )
  return rows
}
