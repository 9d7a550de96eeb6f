import type { FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { Config } from '../../config.js'
import { ProblemSchema } from './schemas.js'

/** OpenAPI 3.1 is generated from the route schemas; `/docs` renders it from locally served assets. */
export async function registerOpenApi(app: FastifyInstance, config: Config): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'workplace-api',
        version: '0.1.0',
        description: [
          'Multi-tenant workplace platform API. Obtain a token with `POST /api/auth/login` and send it as `Authorization: Bearer …`.',
          'Every error is RFC 9457 `application/problem+json` (the `Problem` schema) with a stable `code`; a 422 names each offending field in `errors`.',
          'Lists take `selects`, `relations`, `filter[field][operator]=value`, `sort`, `limit`, `offset`; any other query key is a 422.',
        ].join('\n\n'),
        license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
      },
      servers: [{ url: config.baseUrl }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              'Opaque access token (wp_…) from `POST /api/auth/login`: tenant + username + password, a `login_code` after single sign-on (`GET /api/auth/oidc/{tenant}/start`), or an `mfa_token` with a TOTP or recovery code. A token of a user whose role requires MFA and who has not enrolled yet only reaches the enrollment routes (403 `mfa_enrollment_required` elsewhere).',
          },
          scimBearer: { type: 'http', scheme: 'bearer', description: 'SCIM token (wpscim_…), for /scim/v2 only' },
        },
      },
      security: [{ bearer: [] }],
    },
    // component schemas are named by their `$id` (User, Notification, …) instead of def-0, def-1, …
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `Schema${i}`),
    },
    transform: ({ schema, url, route }) => {
      const publicRoute = (route as { config?: { public?: boolean } }).config?.public
      const transformed = { ...(schema ?? {}) } as Record<string, unknown>
      // a route with its own authentication (the SCIM service provider) names its scheme itself
      if (publicRoute && transformed.security === undefined) transformed.security = []
      return { schema: transformed as typeof schema, url }
    },
  })
  // the docs page and its assets are public; everything else authenticates
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) route.config = { ...(route.config ?? {}), public: true }
  })
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true },
    staticCSP: true,
    logLevel: 'warn',
  })
  let document: unknown
  app.get(
    '/api/openapi.json',
    { config: { public: true }, schema: { hide: true } },
    async () => (document ??= finishDocument(app.swagger())),
  )
}

type Schema = Record<string, unknown>
type Parameter = { in: string; name: string; schema?: Schema; style?: string; explode?: boolean }
type Response = {
  description?: string
  content?: Record<string, { schema?: unknown }>
  headers?: Record<string, { $ref: string }>
}
interface Operation {
  operationId?: string
  summary?: string
  description?: string
  parameters?: Parameter[]
  responses?: Record<string, Response>
}
interface Document {
  paths?: Record<string, Record<string, Operation>>
  components?: { schemas?: Record<string, Schema>; headers?: Record<string, unknown> }
}

/** The fair-use headers (docs/limits.md), once in components and referenced by every authenticated operation. */
const LIMIT_HEADERS = {
  'RateLimit-Policy': {
    description:
      'The rate-limit policies the request drew on (draft-ietf-httpapi-ratelimit-headers): `"token-read";q=1200;w=60, "tenant-read";q=12000;w=60` — a quota `q` of requests per window of `w` seconds, for the token and for the whole tenant.',
    schema: { type: 'string' },
  },
  RateLimit: {
    description:
      'Where each policy stands: `"token-read";r=1187;t=42` — `r` requests remaining (fleet-wide, approximate) and `t` seconds until the window resets.',
    schema: { type: 'string' },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying (on 429 and 503).',
    schema: { type: 'integer', minimum: 0 },
  },
}
const limitHeaderRefs = (names: Array<keyof typeof LIMIT_HEADERS>) =>
  Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]))

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']
const PROBLEM_REF = { $ref: '#/components/schemas/Problem' }

const camel = (segment: string) =>
  segment.replace(/^\.+/, '').replace(/[-_.]+([a-z0-9])/gi, (_, c: string) => c.toUpperCase())
const capital = (word: string) => word.charAt(0).toUpperCase() + word.slice(1)

/** `GET /api/users` → users.list, `PUT /api/roles/{id}` → roles.update, `POST /api/auth/login` → auth.login.create … */
function operationName(path: string, method: string): { base: string; verb: string; params: string[] } {
  const segments = path
    .replace(/^\/api\//, '/')
    .split('/')
    .filter(Boolean)
  const literals = segments.filter((s) => !s.startsWith('{')).map(camel)
  const params = segments.filter((s) => s.startsWith('{')).map((s) => s.slice(1, -1))
  const onItem = segments.at(-1)?.startsWith('{') ?? false
  const verbs: Record<string, [string, string]> = {
    get: ['list', 'get'],
    post: ['create', 'post'],
    put: ['updateMany', 'update'],
    patch: ['patchMany', 'patch'],
    delete: ['deleteMany', 'delete'],
  }
  const verb = (verbs[method] ?? [method, method])[onItem ? 1 : 0]
  return { base: literals.join('.') || 'root', verb, params }
}

/** A sub-path that is an action or a single document, not a collection: named without a verb (auth.login, users.current). */
function isAction(operation: Operation, path: string, method: string): boolean {
  if (path.split('/').filter((s) => s && !s.startsWith('{')).length < 2 || path.endsWith('}')) return false
  const responses = operation.responses ?? {}
  if (method === 'post') return !responses['201']
  if (method !== 'get') return false
  const schema: unknown = responses['200']?.content?.['application/json']?.schema
  return !(typeof schema === 'object' && schema !== null && 'type' in schema && schema.type === 'array')
}

const WORDS: Record<string, string> = {
  list: 'List',
  get: 'Get one',
  create: 'Create one',
  post: 'Act on one',
  update: 'Update one',
  patch: 'Change one',
  delete: 'Delete one',
  updateMany: 'Update',
  deleteMany: 'Delete',
  patchMany: 'Change',
}
const spaced = (name: string) => name.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()
const singular = (noun: string) => noun.replace(/ies$/, 'y').replace(/([^s])s$/, '$1')

/**
 * The document as served: operationIds (unique, `resource.verb`), a summary on every operation, query
 * serialization (`filter` is a deepObject), and every error response as `application/problem+json` with
 * the `Problem` schema (the server sends nothing else for 4xx/5xx).
 */
function finishDocument<T>(input: T): T {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion -- @fastify/swagger's document (OpenAPI 3 here), read through the parts edited below
  const doc = input as Document
  const seen = new Map<string, number>()
  const operations: Array<{ path: string; method: string; operation: Operation }> = []
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, operation] of Object.entries(item))
      if (METHODS.includes(method)) operations.push({ path, method, operation })
  }
  const named = operations.map(({ path, method, operation }) => ({
    path,
    method,
    operation,
    ...operationName(path, method),
  }))
  for (const n of named) if (isAction(n.operation, n.path, n.method)) n.verb = ''
  const plainName = (n: { base: string; verb: string }) => (n.verb ? `${n.base}.${n.verb}` : n.base)
  for (const n of named) seen.set(plainName(n), (seen.get(plainName(n)) ?? 0) + 1)
  for (const n of named) {
    const { operation, base, verb, params } = n
    const plain = plainName(n)
    operation.operationId ??=
      seen.get(plain)! > 1 && params.length > 0 ? `${plain}By${params.map(capital).join('And')}` : plain
    if (!operation.summary) {
      const firstSentence = operation.description?.split(/(?<=\.)\s/)[0]
      const noun = spaced(base.split('.').at(-1)!)
      operation.summary =
        firstSentence && firstSentence.length <= 120
          ? firstSentence.replace(/\.$/, '')
          : !verb
            ? capital(spaced(base.split('.').slice(-2).join(' ')))
            : verb === 'list' || verb.endsWith('Many')
              ? `${WORDS[verb]} ${noun}`
              : `${WORDS[verb] ?? capital(verb)} ${singular(noun)}`
    }
    const isPublic = 'security' in operation && Array.isArray(operation.security) && operation.security.length === 0
    operation.description ??= `${operation.summary}. ${isPublic ? 'No authentication needed.' : 'Needs a bearer token; permissions are checked per record (see docs/permissions.md).'}`
    for (const parameter of operation.parameters ?? []) {
      const schema = parameter.schema
      if (!schema || parameter.in !== 'query') continue
      if (typeof schema.style === 'string') parameter.style = schema.style
      if (typeof schema.explode === 'boolean') parameter.explode = schema.explode
      delete schema.style
      delete schema.explode
    }
    // every authenticated route is rate-limited: its answers carry the limit headers, and it may answer 429
    if (!isPublic || n.path.startsWith('/scim/')) {
      operation.responses ??= {}
      operation.responses['429'] ??= {}
      for (const [status, response] of Object.entries(operation.responses)) {
        if (/^[23]/.test(status))
          response.headers = { ...response.headers, ...limitHeaderRefs(['RateLimit-Policy', 'RateLimit']) }
        if (status === '429') {
          response.headers = limitHeaderRefs(['Retry-After', 'RateLimit-Policy', 'RateLimit'])
          // SCIM's errors are RFC 7644 documents: the 429 has the content of the operation's other client errors
          const scimError = Object.entries(operation.responses).find(([other]) => /^4/.test(other) && other !== '429')
          response.content = n.path.startsWith('/scim/')
            ? scimError?.[1].content
            : { 'application/problem+json': { schema: PROBLEM_REF } }
        }
      }
    }
    for (const [status, response] of Object.entries(operation.responses ?? {})) {
      if (!/^[45]/.test(status)) continue
      // SCIM answers its errors as RFC 7644 documents (application/scim+json), as its routes declare
      if (n.path.startsWith('/scim/')) {
        response.description = status.startsWith('4')
          ? 'Client error (RFC 7644 error)'
          : 'Server error (RFC 7644 error)'
        continue
      }
      response.description =
        status === '429'
          ? 'Too many requests: a rate or concurrency limit (docs/limits.md); retry after `Retry-After` seconds'
          : status.startsWith('4')
            ? 'Client error (problem details, RFC 9457)'
            : 'Server error (problem details, RFC 9457)'
      response.content = { 'application/problem+json': { schema: PROBLEM_REF } }
    }
  }
  const problemSchema: Schema = { ...ProblemSchema }
  const { $id: _id, ...problem } = problemSchema
  doc.components = {
    ...doc.components,
    schemas: { ...doc.components?.schemas, Problem: problem },
    headers: { ...doc.components?.headers, ...LIMIT_HEADERS },
  }
  return input
}
