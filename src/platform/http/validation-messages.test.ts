import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { RouteOptions } from 'fastify'
import { buildApp } from '../../app.js'
import { validationErrors } from './validation-messages.js'
import { createAjv } from '../validation/validator.js'
import { Type } from 'typebox'
import { buildTestApp, call, testConfig } from '../../../test/helpers/build-test-app.js'
import { given } from '../../../test/helpers/given.js'
import { testDb } from '../../../test/helpers/test-database.js'

const db = testDb()

type Schema = { type?: string | string[]; anyOf?: Schema[]; oneOf?: Schema[]; const?: unknown; enum?: unknown[] }
const acceptsObject = (s: Schema): boolean =>
  s.anyOf || s.oneOf
    ? [...(s.anyOf ?? []), ...(s.oneOf ?? [])].some(acceptsObject)
    : s.type === undefined
      ? s.const === undefined && s.enum === undefined
      : [s.type].flat().includes('object')

/** Messages must be actionable: no regular expressions, no ajv jargon, no "must be null" next to another message. */
const UNREADABLE = [
  /must match pattern/,
  /\^|\$'|\\d/,
  /must match a schema in anyOf/,
  /must be equal to constant/,
  /must be null/,
]

test('each rule of the message table', () => {
  const ajv = createAjv()
  const schema = Type.Object(
    {
      gender: Type.Union([Type.Union([Type.Literal('male'), Type.Literal('female')]), Type.Null()]),
      kind: Type.Union([Type.Literal('a'), Type.Literal('b')]),
      mode: Type.String({ enum: ['x', 'y'] }),
      count: Type.Union([Type.Integer(), Type.Null()]),
      code: Type.String({ pattern: '^[0-9]+$', 'x-expected': 'digits only' }),
      raw: Type.String({ pattern: '^[a-z]+$' }),
      name: Type.String({ minLength: 3 }),
    },
    { additionalProperties: false },
  )
  const validate = ajv.compile(schema)
  validate({ gender: 'other', kind: 'c', mode: 'z', count: 'many', code: 'abc', raw: 'ABC', name: 'x', extra: 1 })
  const table: Record<string, string[]> = {
    gender: ['must be one of: "male", "female"'],
    kind: ['must be one of: "a", "b"'],
    mode: ['must be one of: "x", "y"'],
    count: ['must be an integer or null'],
    code: ['must be digits only'],
    raw: ['has an invalid format'],
    name: ['must be at least 3 characters'],
    extra: ['is not an allowed field'],
  }
  assert.deepEqual({ ...validationErrors(validate.errors ?? []) }, table)
})

test('every JSON body of every route reports all its wrong fields at once, in readable words', async () => {
  const routes: RouteOptions[] = []
  await buildApp({
    config: testConfig(),
    db: testDb(),
    onRoute: (route) => {
      routes.push(route)
    },
  })
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  let checked = 0
  for (const route of routes) {
    const body = route.schema?.body as { properties?: Record<string, unknown>; content?: unknown } | undefined
    if (!body?.properties || body.content) continue
    // SCIM answers RFC 7644 errors (400 invalidValue) to SCIM tokens only: src/modules/scim/scim-users.test.ts
    if (route.url.startsWith('/scim/')) continue
    const method = ([] as string[]).concat(route.method)[0]
    const url = route.url.replace(/:[A-Za-z]+\??/g, '1')
    // every declared field gets a value of no JSON type it could accept, plus one unknown key
    const wrong = Object.fromEntries(Object.keys(body.properties).map((key) => [key, { wrong: [] }]))
    const res = await call(app, tenant.adminToken, {
      method: method as 'POST',
      url,
      payload: { ...wrong, not_a_field: 1 },
    })
    if (res.statusCode === 404) continue // a route whose path parameter is not a plain id
    assert.equal(res.statusCode, 422, `${method} ${route.url}: ${res.body}`)
    const errors = res.json().errors as Record<string, string[]>
    const mustBeNamed = Object.entries(body.properties)
      .filter(([, schema]) => !acceptsObject(schema as Schema))
      .map(([key]) => key)
    for (const key of [...mustBeNamed, 'not_a_field']) {
      assert.ok(
        errors[key] ?? Object.keys(errors).some((k) => k.startsWith(`${key}.`)),
        `${method} ${route.url} names ${key}: ${res.body}`,
      )
    }
    for (const [field, messages] of Object.entries(errors)) {
      for (const message of messages) {
        for (const pattern of UNREADABLE)
          assert.doesNotMatch(message, pattern, `${method} ${route.url} ${field}: ${message}`)
      }
    }
    checked++
  }
  assert.ok(checked >= 15, `checked ${checked} bodies`)
})

test('a short password is reported together with the schema errors of the same body', async () => {
  const app = await buildTestApp()
  const tenant = await given.tenant(db)
  const body = {
    username: 'x y',
    password: 'short',
    first_name: 'A',
    last_name: 'B',
    role_id: tenant.employeeRoleId,
    email: 'not-an-email',
    gender: 'other',
    zipcode: null,
  }
  const res = await call(app, tenant.adminToken, { method: 'POST', url: '/api/users', payload: body })
  assert.equal(res.statusCode, 422, res.body)
  const errors = res.json().errors
  assert.deepEqual(errors.password, ['must be at least 8 characters'])
  assert.deepEqual(errors.email, ['must be a valid email'])
  assert.deepEqual(errors.gender, ['must be one of: "male", "female", "diverse"'])
  assert.deepEqual(errors.username, ['must be letters, digits and . _ @ + - only'])
  assert.equal(errors.zipcode, undefined, 'null is allowed')
  const update = await call(app, tenant.adminToken, {
    method: 'PUT',
    url: `/api/users/${tenant.adminId}`,
    payload: { password: 'short', active: 'yes' },
  })
  assert.equal(update.statusCode, 422, update.body)
  assert.deepEqual(Object.keys(update.json().errors).sort(), ['active', 'password'])
})
