/**
 * No existence oracles (issue 18), generated from the route table: for every route that takes an id
 * (path, query or body), an unprivileged caller gets the same answer for
 *   (a) an existing id of its own tenant that it may not see,
 *   (b) an id of another tenant,
 *   (c) an id that does not exist:
 * same status, same `code`, same error keys, equal bodies once the ids and the request id are removed.
 * Nor may the time tell them apart: the median of (a) and (c) over 200 tries each stays within 3×.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, test } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { call } from '../helpers/build-test-app.js'
import { given, type GivenUser } from '../helpers/given.js'
import { testDb } from '../helpers/test-database.js'
import { buildTenantFixtures, type TenantFixtures } from './support/fixtures.js'
import { ALL_PERMISSIONS, classify, type RouteClass } from './support/route-classes.js'
import { appWithRouteTable, routeKey, type RegisteredRoute } from './support/routes.js'

const db = testDb()
const TRIES = 200
let app: FastifyInstance
let routes: RegisteredRoute[]
/** Tenant A: its folder, content rows, shared item and notification are hidden from the prober. */
let hidden: TenantFixtures
let foreign: TenantFixtures
let missing: TenantFixtures
let prober: GivenUser
let hideableIds: string[]

/** Grant aliases of the content tables (a view grant to someone else hides a row from everyone else). */
const GRANT_ALIASES: Record<string, string> = {
  calendar_events: 'calendarEvent',
  filemanager_directories: 'filemanagerDirectory',
  filemanager_files: 'filemanagerFile',
  forms: 'form',
  infoboard_posts: 'infoboardPost',
  manual_chapters: 'manualChapter',
  manual_entries: 'manualEntry',
  task_executions: 'taskExecution',
  shared_items: 'sharedItem',
}

/** The same shape with every id replaced by one that exists nowhere. */
function missingFixtures(f: TenantFixtures): TenantFixtures {
  let next = 900_000_000
  const swap = (value: unknown): unknown => {
    if (typeof value === 'number') return next++
    if (typeof value === 'string' && /^[0-9a-f-]{36}$/i.test(value)) return randomUUID()
    if (value && typeof value === 'object')
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, k === 'token' || k === 'username' || k === 'slug' ? v : swap(v)]),
      )
    return value
  }
  return swap(f) as TenantFixtures
}

before(async () => {
  ;({ app, routes } = await appWithRouteTable())
  hidden = await buildTenantFixtures(db)
  foreign = await buildTenantFixtures(db)
  missing = missingFixtures(hidden)
  // the folder already carries a view grant to `employee`; the content rows get one too
  for (const [table, id] of Object.entries(hidden.content)) {
    const alias = GRANT_ALIASES[table]
    if (alias) await given.grant(db, hidden.tenant, { key: 'view', to: ['user', hidden.employee.id], on: [alias, id] })
  }
  hideableIds = [
    hidden.folderId,
    hidden.grantId,
    hidden.notificationId,
    hidden.pushSubscriptionId,
    ...Object.values(hidden.content),
  ]
    .filter((id) => id !== undefined)
    .map(String)
  // every module's view permission and users/roles/departments reading, nothing that manages or administrates
  const reading = ALL_PERMISSIONS.filter((p) => p.endsWith('.view'))
  prober = await given.user(db, hidden.tenant, { roleId: await given.role(db, hidden.tenant, reading) })
})
after(() => app.close())

interface Built {
  url: string
  payload?: unknown
  headers?: Record<string, string>
}

function build(spec: RouteClass, f: TenantFixtures): Built | undefined {
  const url = spec.path(f)
  if (url === undefined) return undefined
  const body = spec.body?.(f)
  return { url, payload: body?.payload, headers: body?.headers }
}

const send = (route: RegisteredRoute, request: Built): Promise<LightMyRequestResponse> =>
  call(app, prober.token, {
    method: route.method as never,
    url: request.url,
    payload: request.payload as never,
    headers: request.headers,
  })

/** What a caller can compare: status, code, error keys and the body without ids and request ids. */
function observable(response: LightMyRequestResponse, ids: string[]) {
  let text = response.body
  for (const id of [...ids].sort((x, y) => y.length - x.length)) text = text.split(id).join('<id>')
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {
    /* not JSON */
  }
  if (body && typeof body === 'object') delete body.instance
  return {
    status: response.statusCode,
    contentType: String(response.headers['content-type'] ?? ''),
    code: body?.code,
    errorKeys: body?.errors ? Object.keys(body.errors).sort() : undefined,
    body,
  }
}

/** The ids (as text) a request carries: the fixture values that appear in its URL or body. */
function idsOf(request: Built, f: TenantFixtures): string[] {
  const text = `${request.url} ${typeof request.payload === 'string' || Buffer.isBuffer(request.payload) ? '' : JSON.stringify(request.payload ?? '')}`
  const values = new Set<string>()
  const collect = (value: unknown) => {
    if (typeof value === 'number' || (typeof value === 'string' && /^[0-9a-f-]{36}$/i.test(value)))
      values.add(String(value))
    else if (value && typeof value === 'object')
      for (const [k, v] of Object.entries(value)) if (k !== 'token') collect(v)
  }
  collect(f)
  return [...values].filter((id) => new RegExp(`(^|[^0-9a-f-])${id}($|[^0-9a-f-])`, 'i').test(text))
}

function idTakingRoutes() {
  return routes.flatMap((route) => {
    const spec = classify(route.method, route.url)
    if (!spec || spec.kind === 'public' || spec.kind === 'self' || spec.skip) return []
    const [a, b, c] = [build(spec, hidden), build(spec, foreign), build(spec, missing)]
    if (!a || !b || !c) return []
    const ids = idsOf(a, hidden)
    if (ids.length === 0) return []
    return [
      { route, spec, requests: { a, b, c }, hideable: !spec.seesAll && ids.some((id) => hideableIds.includes(id)) },
    ]
  })
}

/** Medians of `first` and `second` over TRIES each, interleaved so that a load change hits both alike. */
async function medians(route: RegisteredRoute, first: Built, second: Built): Promise<[number, number]> {
  const times: [number[], number[]] = [[], []]
  for (let i = 0; i < TRIES; i++) {
    for (const [index, request] of [first, second].entries()) {
      const start = process.hrtime.bigint()
      await send(route, request)
      times[index].push(Number(process.hrtime.bigint() - start) / 1e6)
    }
  }
  const median = (list: number[]) => list.sort((x, y) => x - y)[Math.floor(list.length / 2)]
  return [median(times[0]), median(times[1])]
}

test('every id-taking route answers alike for a hidden, a foreign and a missing id', async (t) => {
  const covered = idTakingRoutes()
  console.log(
    `# existence oracles: ${covered.length} id-taking routes, ${covered.filter((r) => r.hideable).length} with an id the prober may not see`,
  )
  assert.ok(covered.length >= 40, `only ${covered.length} id-taking routes found`)
  for (const { route, requests, hideable } of covered) {
    await t.test(routeKey(route), async () => {
      const [a, b, c] = [await send(route, requests.a), await send(route, requests.b), await send(route, requests.c)]
      const ids = [...idsOf(requests.a, hidden), ...idsOf(requests.b, foreign), ...idsOf(requests.c, missing)]
      const missingAnswer = observable(c, ids)
      assert.ok(missingAnswer.status >= 400, `a missing id answered ${missingAnswer.status}`)
      assert.deepEqual(observable(b, ids), missingAnswer, "another tenant's id must answer like a missing one")
      if (hideable)
        assert.deepEqual(
          observable(a, ids),
          missingAnswer,
          'an id the caller may not see must answer like a missing one',
        )
    })
  }
})

test('response times do not tell a hidden id from a missing one (medians within 3×)', async (t) => {
  for (const { route, requests } of idTakingRoutes().filter((r) => r.hideable)) {
    await t.test(routeKey(route), async () => {
      const [hiddenMs, missingMs] = await medians(route, requests.a, requests.c)
      const ratio = Math.max(hiddenMs, missingMs) / Math.max(0.001, Math.min(hiddenMs, missingMs))
      console.log(
        `# ${routeKey(route)}: median hidden ${hiddenMs.toFixed(2)} ms, missing ${missingMs.toFixed(2)} ms (${ratio.toFixed(2)}×)`,
      )
      assert.ok(ratio <= 3, `${ratio.toFixed(2)}× apart`)
    })
  }
})
