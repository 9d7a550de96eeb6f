/**
 * Hidden values (issue 33), generated from the route table and the OpenAPI document:
 *  - every list and show route, every field it names (selects, filter, sort), every relation, for
 *    each role of a small permission matrix: a field or relation the caller may not read answers
 *    exactly like an unknown one, whatever value is asked for;
 *  - two worlds that differ only in a hidden value (a hidden field's value, a grant on a hidden
 *    target) answer every text search and relation alike;
 *  - every body field naming an entity (`*_id`, `*_ids`) is classified: how it is checked against
 *    the tenant and the caller's visibility. An unclassified one fails the suite.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import { call } from '../helpers/build-test-app.js'
import { given, type GivenUser } from '../helpers/given.js'
import { testDb } from '../helpers/test-database.js'
import { BODY_ID_FIELDS } from './support/body-ids.js'
import { buildTenantFixtures, type TenantFixtures } from './support/fixtures.js'
import { classify } from './support/route-classes.js'
import { appWithRouteTable, routeKey, type RegisteredRoute } from './support/routes.js'

const db = testDb()
let app: FastifyInstance
let routes: RegisteredRoute[]
let f: TenantFixtures
let doc: OpenApi
/** The permission matrix: who probes. */
const roles: Record<string, GivenUser> = {}

interface OpenApi {
  paths: Record<string, Record<string, Operation>>
  components?: { schemas?: Record<string, Schema> }
}
interface Operation {
  parameters?: Array<{ name: string; in: string; schema?: Schema; description?: string }>
  requestBody?: { content?: Record<string, { schema?: Schema }> }
}
interface Schema {
  $ref?: string
  description?: string
  properties?: Record<string, Schema>
  items?: Schema
  anyOf?: Schema[]
  oneOf?: Schema[]
  allOf?: Schema[]
}

before(async () => {
  ;({ app, routes } = await appWithRouteTable())
  f = await buildTenantFixtures(db)
  doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as OpenApi
  const matrix: Record<string, string[]> = {
    employee: ['users.view', 'departments.view', 'calendar.view', 'filemanager.view', 'forms.view', 'infoboard.view'],
    usersOnly: ['users.view'],
    detailReader: ['users.view', 'users.viewDetails'],
    userManager: ['users.view', 'users.create', 'users.update', 'users.delete', 'roles.view', 'departments.view'],
  }
  for (const [name, permissions] of Object.entries(matrix))
    roles[name] = await given.user(db, f.tenant, { roleId: await given.role(db, f.tenant, permissions) })
})
after(() => app.close())

const get = (token: string, url: string) => call(app, token, { method: 'GET', url })
const openApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}')

/** The names a list's description of a query key enumerates ("Fields: a, b, c"). */
function named(operation: Operation, key: string): string[] {
  const parameter = operation.parameters?.find((p) => p.name === key && p.in === 'query')
  const text = parameter?.schema?.description ?? parameter?.description ?? ''
  const list = text.split(':').slice(1).join(':')
  return list
    .split(/[,|]/)
    .map((s) => s.trim().replace(/\.$/, ''))
    .filter((s) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(s))
}

/** The observable answer with one name masked (an unreadable and an unknown name must look alike). */
function masked(res: LightMyRequestResponse, name: string) {
  let body: Record<string, unknown> | string = res.body.split(name).join('<name>')
  try {
    body = JSON.parse(body) as Record<string, unknown>
    delete body.instance
  } catch {
    /* not JSON */
  }
  return { status: res.statusCode, body }
}

/**
 * Whether `user` may read `field` of the rows of a read: selecting it there, or on the single show
 * of a row of the same list (a list may output fewer fields than the caller may read, e.g. users'
 * extended fields; filtering and searching them is then allowed).
 */
async function mayRead(user: GivenUser, route: RegisteredRoute, url: string, field: string): Promise<boolean> {
  const join = (u: string) => `${u}${u.includes('?') ? '&' : '?'}selects=${field}`
  if ((await get(user.token, join(url))).statusCode === 200) return true
  const show = routes.find((r) => r.method === 'GET' && r.url === `${route.url}/:id`)
  const showUrl = show && classify(show.method, show.url)?.path(f)
  return showUrl !== undefined && (await get(user.token, join(showUrl))).statusCode === 200
}

/** Every GET route with `selects` (lists and shows) that the sweep can address. */
function readRoutes() {
  return routes.flatMap((route) => {
    if (route.method !== 'GET') return []
    const operation = doc.paths[openApiPath(route.url)]?.get
    const spec = classify(route.method, route.url)
    if (!operation || !spec || spec.kind === 'public' || spec.skip) return []
    const url = spec.path(f)
    if (url === undefined || !named(operation, 'selects').length) return []
    return [{ route, url, operation }]
  })
}

test('an unreadable field or relation answers like an unknown one, whatever the value (routes × fields × roles)', async (t) => {
  const covered = readRoutes()
  let checks = 0
  let hiddenPairs = 0
  const join = (url: string, query: string) => `${url}${url.includes('?') ? '&' : '?'}${query}`
  for (const { route, url, operation } of covered) {
    const fields = named(operation, 'selects')
    const relations = named(operation, 'relations')
    const isList = operation.parameters?.some((p) => p.name === 'filter') ?? false
    await t.test(routeKey(route), async () => {
      for (const [role, user] of Object.entries(roles)) {
        const unknownSelect = masked(await get(user.token, join(url, 'selects=zz_unknown')), 'zz_unknown')
        for (const field of fields) {
          checks++
          const selected = await get(user.token, join(url, `selects=${field}`))
          if (selected.statusCode !== 422) continue
          assert.deepEqual(masked(selected, field), unknownSelect, `${role}: selects=${field}`)
          if (!isList || (await mayRead(user, route, url, field))) continue
          hiddenPairs++
          const unknownAnswers = [
            masked(await get(user.token, join(url, 'filter[zz_unknown]=1')), 'zz_unknown'),
            masked(await get(user.token, join(url, 'filter[zz_unknown][like]=a')), 'zz_unknown'),
            masked(await get(user.token, join(url, 'sort=-zz_unknown')), 'zz_unknown'),
          ]
          for (const value of ['1', 'a', 'zz-two-worlds@example.test']) {
            const answers = [
              masked(await get(user.token, join(url, `filter[${field}]=${encodeURIComponent(value)}`)), field),
              masked(await get(user.token, join(url, `filter[${field}][like]=${encodeURIComponent(value)}`)), field),
              masked(await get(user.token, join(url, `sort=-${field}`)), field),
            ]
            answers.forEach((answer, i) => {
              if (answer.status === 200) assert.fail(`${role}: a query on unreadable ${field} answered 200`)
              if (unknownAnswers[i].status === 422) assert.deepEqual(answer, unknownAnswers[i], `${role}: ${field}`)
            })
          }
        }
        const unknownRelation = masked(await get(user.token, join(url, 'relations=zz_unknown')), 'zz_unknown')
        for (const relation of relations) {
          checks++
          const loaded = await get(user.token, join(url, `relations=${relation}`))
          if (loaded.statusCode === 422) {
            hiddenPairs++
            assert.deepEqual(masked(loaded, relation), unknownRelation, `${role}: relations=${relation}`)
          }
        }
      }
    })
  }
  console.log(
    `# hidden values: ${covered.length} list/show routes × their fields and relations × ${Object.keys(roles).length} roles = ${checks} checks, ${hiddenPairs} of them on something the role may not read`,
  )
  assert.ok(covered.length >= 20, `only ${covered.length} read routes found`)
})

/**
 * Two worlds: one row of a list whose hidden field holds a marker, or does not. Every role that may
 * not read the field gets identical answers to every text search and filter for the marker.
 */
test('two worlds differing in a hidden value answer text search alike', async (t) => {
  const target = f.victim.id
  const columns = await sql<{ column_name: string }>`select column_name from information_schema.columns
    where table_name = 'users' and data_type in ('text', 'character varying')`.execute(db)
  const textColumns = new Set(columns.rows.map((r) => r.column_name))
  let pairs = 0
  for (const url of ['/api/users', '/api/users/deleted']) {
    const operation = doc.paths[url]?.get
    if (!operation) continue
    const fields: string[] = []
    for (const name of named(operation, 'selects').filter((n) => textColumns.has(n))) {
      // only free-text columns can hold the marker (not foreign keys or enumerations)
      const held =
        await sql`update users set ${sql.ref(name)} = ${`other-${name}`} where tenant_id = ${f.tenant.id} and id = ${target}`
          .execute(db)
          .then(
            () => true,
            () => false,
          )
      if (held) fields.push(name)
    }
    await t.test(`GET ${url}`, async () => {
      for (const [role, user] of Object.entries(roles)) {
        for (const field of fields) {
          if (await mayRead(user, { method: 'GET', url }, url, field)) continue
          const answers = []
          for (const value of ['zq-marker-4711', `other-${field}`]) {
            await sql`update users set ${sql.ref(field)} = ${value} where tenant_id = ${f.tenant.id} and id = ${target}`.execute(
              db,
            )
            answers.push(
              (await get(user.token, `${url}?filter[id]=${target}&filter[text]=zq-marker-4711&selects=id`)).body,
            )
          }
          pairs++
          assert.equal(answers[0], answers[1], `${role} tells ${field} through filter[text]`)
        }
      }
    })
  }
  console.log(`# two worlds (text search): ${pairs} route × hidden field × role pairs`)
  assert.ok(pairs >= 10, `only ${pairs} pairs`)
})

test('two worlds differing in a grant on a hidden target answer every relation alike', async (t) => {
  const hiddenFolder = await given.folder(db, f.tenant, { type: 'form' })
  await given.grant(db, f.tenant, { key: 'view', to: ['user', f.tenant.adminId], on: ['folder', hiddenFolder] })
  let pairs = 0
  for (const { route, url, operation } of readRoutes().filter((r) => r.route.url === '/api/users/:id')) {
    const shown = url.replace(/\/\d+$/, `/${f.victim.id}`)
    await t.test(routeKey(route), async () => {
      for (const [role, user] of Object.entries(roles)) {
        for (const relation of named(operation, 'relations')) {
          const answers = []
          for (const world of ['granted', 'not granted']) {
            await db
              .deleteFrom('entity_permissions')
              .where('tenant_id', '=', f.tenant.id)
              .where('permission_entity', '=', 'user')
              .where('permission_entity_id', '=', f.victim.id)
              .execute()
            if (world === 'granted')
              await given.grant(db, f.tenant, { key: 'view', to: ['user', f.victim.id], on: ['folder', hiddenFolder] })
            const res = await get(user.token, `${shown}?relations=${relation}&selects=id`)
            answers.push(res.body.replace(/"(created_at|updated_at)":"[^"]*"/g, ''))
          }
          pairs++
          assert.equal(answers[0], answers[1], `${role} tells a grant on a hidden folder through relations=${relation}`)
        }
      }
    })
  }
  console.log(`# two worlds (relations): ${pairs} route × relation × role pairs`)
  assert.ok(pairs >= 8, `only ${pairs} pairs`)
})

/** Body fields (`*_id`, `*_ids`) of every documented write, with the operations naming them. */
function bodyIdFields(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>()
  const walk = (schema: Schema | undefined, operation: string, depth: number) => {
    if (!schema || depth > 10) return
    const resolved = schema.$ref ? doc.components?.schemas?.[schema.$ref.split('/').pop()!] : schema
    if (!resolved) return
    for (const list of [resolved.anyOf, resolved.oneOf, resolved.allOf])
      list?.forEach((s) => walk(s, operation, depth + 1))
    walk(resolved.items, operation, depth + 1)
    for (const [name, sub] of Object.entries(resolved.properties ?? {})) {
      if (/_ids?$/.test(name)) found.set(name, (found.get(name) ?? new Set()).add(operation))
      walk(sub, operation, depth + 1)
    }
  }
  for (const [path, operations] of Object.entries(doc.paths))
    for (const [method, operation] of Object.entries(operations))
      for (const content of Object.values(operation.requestBody?.content ?? {}))
        walk(content.schema, `${method.toUpperCase()} ${path}`, 0)
  return found
}

test('every body field naming an entity is classified (checked against tenant and visibility)', () => {
  const found = bodyIdFields()
  const unclassified = [...found].filter(([name]) => !Object.hasOwn(BODY_ID_FIELDS, name))
  console.log(
    `# body ids: ${found.size} field names in ${new Set([...found.values()].flatMap((s) => [...s])).size} operations, ${found.size - unclassified.length} classified`,
  )
  assert.deepEqual(
    unclassified.map(([name, operations]) => `${name} (${[...operations].join(', ')})`),
    [],
    'classify each in test/reliability/support/body-ids.ts: how is it checked against the tenant and visibility?',
  )
  assert.ok(found.size >= 5, `only ${found.size} id fields found`)
})
